//! The assets worker: fetches the images brandings name (logos, senders' photos) once,
//! through the outbound guard, and keeps them as PNG fitted within 512 px, so pages serve them
//! from lps's own origin (`/assets/{key}`) and a prospect's browser never asks a third party.
//! Until an image is kept (or when it cannot be fetched, decoded or is too large), pages show
//! their fallback (the company's name, no photo). Bounds: 5 MiB downloaded, 10 s, 3 redirects
//! (each checked), images up to 8,192 px a side and 64 MiB decoded; a failure is tried again
//! an hour later, or at once when its branding is saved again ([`fetch_now`], whose answer
//! says why an image could not be kept).

use std::io::Cursor;
use std::time::Duration;

use sha2::{Digest, Sha256};

use crate::App;
use crate::domain::page_changes::{self, Changed};
use crate::outbound;
use crate::store::{assets, designs};
use crate::time;

/// How often the brandings are looked at for new images.
const POLL: Duration = Duration::from_secs(2);
/// The most bytes one image may take to download.
const MAX_DOWNLOAD: usize = 5 * 1024 * 1024;
/// Kept images fit within this many pixels a side.
const FIT: u32 = 512;
/// A failed fetch is tried again after this long.
const RETRY_AFTER: i64 = 3_600 * 1_000_000;

/// How long fetching one image may take, and how many redirects it may follow.
const LIMITS: outbound::Limits = outbound::Limits {
    connect_timeout: Duration::from_secs(5),
    timeout: Duration::from_secs(10),
    max_redirects: 3,
};

/// The client images are fetched with: through the outbound guard, within [`LIMITS`].
fn client(app: &App) -> Result<outbound::Client, String> {
    outbound::client(
        app.config.allow_private_network,
        &app.config.resolve,
        LIMITS,
    )
    .map_err(|err| format!("cannot build the assets HTTP client: {err}"))
}

pub async fn run(app: App) {
    let client = match client(&app) {
        Ok(client) => client,
        Err(error) => {
            tracing::error!(%error, "images will not be fetched");
            return;
        }
    };
    loop {
        if let Err(err) = fetch_missing(&app, &client).await {
            tracing::warn!(error = %err, "images could not be fetched");
        }
        tokio::time::sleep(POLL).await;
    }
}

/// Fetches every image not kept yet (a few at a time) and moves the pages showing them on.
async fn fetch_missing(app: &App, client: &outbound::Client) -> crate::Result<()> {
    let now = time::now();
    let urls = assets::missing(app.db.pool(), now - RETRY_AFTER, 8).await?;
    for url in urls {
        fetch_and_keep(app, client, &url).await?;
    }
    Ok(())
}

/// Fetches the images at `urls` that are not kept yet, now (however recently a try failed),
/// for a branding just saved: its answer can then say why one could not be kept, and saving
/// again is how a person tries again. Bounded by [`LIMITS`], the images fetched side by side.
pub(crate) async fn fetch_now(app: &App, urls: &[&str]) -> crate::Result<()> {
    let mut wanted = Vec::new();
    for url in urls {
        if !assets::is_kept(app.db.pool(), url).await? {
            wanted.push(*url);
        }
    }
    if wanted.is_empty() {
        return Ok(());
    }
    let client = client(app).map_err(|error| crate::Error::Internal(anyhow::anyhow!(error)))?;
    let mut fetching = tokio::task::JoinSet::new();
    for url in wanted {
        let (app, client, url) = (app.clone(), client.clone(), url.to_owned());
        fetching.spawn(async move { fetch_and_keep(&app, &client, &url).await });
    }
    while let Some(done) = fetching.join_next().await {
        done.map_err(|err| crate::Error::Internal(err.into()))??;
    }
    Ok(())
}

/// Fetches the image at `url` and keeps it (or why it could not be), moving the pages that
/// show it on to lps's own copy.
async fn fetch_and_keep(app: &App, client: &outbound::Client, url: &str) -> crate::Result<()> {
    let kept = fetch(client, url)
        .await
        .and_then(|bytes| fitted_png(&bytes));
    let mut tx = app.db.begin_write().await?;
    let campaigns = match &kept {
        Ok(png) => {
            let key = hex::encode(Sha256::digest(png));
            assets::keep(&mut *tx, url, Ok((&key, png)), time::now()).await?;
            assets::campaigns_showing(&mut *tx, url).await?
        }
        Err(error) => {
            tracing::warn!(%url, %error, "an image for pages could not be kept");
            assets::keep(&mut *tx, url, Err(error), time::now()).await?;
            Vec::new()
        }
    };
    // The pages showing it switch to lps's own copy.
    let mut ids = Vec::new();
    for (campaign_id, branding_id) in campaigns {
        if !ids.contains(&campaign_id) {
            designs::bump_versions(&mut *tx, designs::Affected::Branding(branding_id)).await?;
            ids.push(campaign_id);
        }
    }
    page_changes::commit(app, tx, Changed::Campaigns(ids)).await?;
    Ok(())
}

/// The image's bytes, within the download bound.
async fn fetch(client: &outbound::Client, url: &str) -> Result<Vec<u8>, String> {
    let request = client.get(url).map_err(|refused| refused.to_string())?;
    let response = request.send().await.map_err(|err| {
        outbound::is_refused(&err).unwrap_or_else(|| format!("request failed: {err}"))
    })?;
    if !response.status().is_success() {
        return Err(format!("answered {}", response.status().as_u16()));
    }
    if response
        .content_length()
        .is_some_and(|n| n > MAX_DOWNLOAD as u64)
    {
        return Err("larger than 5 MiB".into());
    }
    let mut body = Vec::new();
    let mut response = response;
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|err| format!("download failed: {err}"))?
    {
        if body.len() + chunk.len() > MAX_DOWNLOAD {
            return Err("larger than 5 MiB".into());
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// The image as PNG, fitted within [`FIT`] pixels a side (metadata dropped). PNG, JPEG, GIF
/// and WebP are read; anything else (SVG included: it can carry scripts) is refused.
pub fn fitted_png(bytes: &[u8]) -> Result<Vec<u8>, String> {
    let mut reader = image::ImageReader::new(Cursor::new(bytes))
        .with_guessed_format()
        .map_err(|err| format!("unreadable: {err}"))?;
    let mut limits = image::Limits::default();
    limits.max_image_width = Some(8_192);
    limits.max_image_height = Some(8_192);
    limits.max_alloc = Some(64 * 1024 * 1024);
    reader.limits(limits);
    let image = reader
        .decode()
        .map_err(|err| format!("not an image lps reads (PNG, JPEG, GIF, WebP): {err}"))?;
    let image = if image.width() > FIT || image.height() > FIT {
        image.thumbnail(FIT, FIT)
    } else {
        image
    };
    let mut png = Vec::new();
    image
        .write_to(&mut Cursor::new(&mut png), image::ImageFormat::Png)
        .map_err(|err| format!("could not be stored: {err}"))?;
    Ok(png)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn png(width: u32, height: u32) -> Vec<u8> {
        let image = image::RgbaImage::from_pixel(width, height, image::Rgba([15, 118, 110, 255]));
        let mut bytes = Vec::new();
        image::DynamicImage::ImageRgba8(image)
            .write_to(&mut Cursor::new(&mut bytes), image::ImageFormat::Png)
            .unwrap();
        bytes
    }

    #[test]
    fn large_images_are_fitted_and_small_ones_kept_as_they_are() {
        let fitted = image::load_from_memory(&fitted_png(&png(2_000, 1_000)).unwrap()).unwrap();
        assert_eq!((fitted.width(), fitted.height()), (512, 256));
        let small = image::load_from_memory(&fitted_png(&png(40, 30)).unwrap()).unwrap();
        assert_eq!((small.width(), small.height()), (40, 30));
    }

    #[test]
    fn an_image_larger_than_8192_pixels_a_side_is_refused_before_it_is_decoded() {
        let refused = fitted_png(&png(8_193, 1)).unwrap_err();
        assert!(refused.contains("not an image lps reads"), "{refused}");
        assert!(fitted_png(&png(8_192, 1)).is_ok());
    }

    #[tokio::test]
    async fn a_download_past_5_mib_is_cut_off() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let app = axum::Router::new()
            .route(
                "/big",
                axum::routing::get(|| async { vec![0u8; MAX_DOWNLOAD + 1] }),
            )
            .route("/small", axum::routing::get(|| async { vec![0u8; 10] }));
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        let limits = outbound::Limits {
            connect_timeout: Duration::from_secs(5),
            timeout: Duration::from_secs(10),
            max_redirects: 0,
        };
        let client = outbound::client(true, &[], limits).unwrap();
        assert_eq!(
            fetch(&client, &format!("{base}/big")).await.unwrap_err(),
            "larger than 5 MiB"
        );
        assert_eq!(
            fetch(&client, &format!("{base}/small"))
                .await
                .unwrap()
                .len(),
            10
        );
        // Without the operator's permission, a private address is never asked.
        let guarded = outbound::client(false, &[], limits).unwrap();
        assert!(fetch(&guarded, &format!("{base}/small")).await.is_err());
    }

    #[test]
    fn what_is_not_a_raster_image_is_refused() {
        assert!(fitted_png(b"<svg xmlns='http://www.w3.org/2000/svg'><script/></svg>").is_err());
        assert!(fitted_png(b"").is_err());
    }
}
