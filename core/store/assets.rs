//! Images pages show, kept by lps (see `jobs::assets`): by the address they came from, and by
//! the key they are served under.

use std::collections::HashMap;

use sqlx::{Any, Executor, FromRow};

use crate::time::Micros;

/// Brandings' image addresses with nothing stored yet, or whose fetch failed before
/// `retry_failed_before`.
pub async fn missing<'c>(
    ex: impl Executor<'c, Database = Any>,
    retry_failed_before: Micros,
    limit: i64,
) -> sqlx::Result<Vec<String>> {
    sqlx::query_scalar(
        "SELECT u.url FROM (
             SELECT logo_url AS url FROM brandings WHERE logo_url IS NOT NULL
             UNION
             SELECT sender_photo_url AS url FROM brandings WHERE sender_photo_url IS NOT NULL
         ) u
         WHERE NOT EXISTS (
             SELECT 1 FROM assets a
             WHERE a.source_url = u.url
               AND (a.content_key IS NOT NULL OR a.fetched_at >= $1)
         )
         LIMIT $2",
    )
    .bind(retry_failed_before)
    .bind(limit)
    .fetch_all(ex)
    .await
}

/// Keeps an image fetched from `source_url` (or, with `stored` `None`, why it could not be).
pub async fn keep<'c>(
    ex: impl Executor<'c, Database = Any>,
    source_url: &str,
    stored: Result<(&str, &[u8]), &str>,
    now: Micros,
) -> sqlx::Result<()> {
    let (key, body, error) = match stored {
        Ok((key, body)) => (Some(key), Some(body.to_vec()), None),
        Err(error) => (None, None, Some(error)),
    };
    sqlx::query(
        "INSERT INTO assets (source_url, content_key, content_type, body, error, fetched_at)
         VALUES ($1, $2, $3, $4, $5, $6)
         ON CONFLICT (source_url) DO UPDATE SET content_key = $2, content_type = $3, body = $4,
                                               error = $5, fetched_at = $6",
    )
    .bind(source_url)
    .bind(key)
    .bind(key.map(|_| "image/png"))
    .bind(body)
    .bind(error)
    .bind(now)
    .execute(ex)
    .await?;
    Ok(())
}

/// Why the images at these addresses could not be kept, as of their last try (addresses kept,
/// or not tried yet, are not in the answer).
pub async fn failures<'c>(
    ex: impl Executor<'c, Database = Any>,
    urls: &[&str],
) -> sqlx::Result<HashMap<String, String>> {
    column_by_source_url(
        ex,
        "error",
        "content_key IS NULL AND error IS NOT NULL",
        urls,
    )
    .await
}

/// Whether the image at `source_url` is kept.
pub async fn is_kept<'c>(
    ex: impl Executor<'c, Database = Any>,
    source_url: &str,
) -> sqlx::Result<bool> {
    let kept: Option<i64> = sqlx::query_scalar(
        "SELECT 1 FROM assets WHERE source_url = $1 AND content_key IS NOT NULL",
    )
    .bind(source_url)
    .fetch_optional(ex)
    .await?;
    Ok(kept.is_some())
}

/// The keys of the images stored for these addresses.
pub async fn keys_for<'c>(
    ex: impl Executor<'c, Database = Any>,
    urls: &[&str],
) -> sqlx::Result<HashMap<String, String>> {
    column_by_source_url(ex, "content_key", "content_key IS NOT NULL", urls).await
}

/// `column` of the rows of these addresses that meet `condition`, by address.
async fn column_by_source_url<'c>(
    ex: impl Executor<'c, Database = Any>,
    column: &'static str,
    condition: &'static str,
    urls: &[&str],
) -> sqlx::Result<HashMap<String, String>> {
    if urls.is_empty() {
        return Ok(HashMap::new());
    }
    let sql = format!(
        "SELECT source_url, {column} FROM assets WHERE {condition} AND source_url IN ({})",
        crate::store::placeholder_list(urls.len(), 1)
    );
    let mut query = sqlx::query_as::<_, (String, String)>(sqlx::AssertSqlSafe(sql));
    for url in urls {
        query = query.bind(*url);
    }
    Ok(query.fetch_all(ex).await?.into_iter().collect())
}

#[derive(Debug, Clone, FromRow)]
pub struct AssetRow {
    pub content_type: String,
    pub body: Vec<u8>,
}

/// The image stored under `key`.
pub async fn by_key<'c>(
    ex: impl Executor<'c, Database = Any>,
    key: &str,
) -> sqlx::Result<Option<AssetRow>> {
    sqlx::query_as(
        "SELECT content_type, body FROM assets WHERE content_key = $1 AND body IS NOT NULL LIMIT 1",
    )
    .bind(key)
    .fetch_optional(ex)
    .await
}

/// Campaigns whose branding shows the image at `source_url`.
pub async fn campaigns_showing<'c>(
    ex: impl Executor<'c, Database = Any>,
    source_url: &str,
) -> sqlx::Result<Vec<(i64, i64)>> {
    sqlx::query_as(
        "SELECT c.id, b.id FROM campaigns c JOIN brandings b ON b.id = c.branding_id
         WHERE b.logo_url = $1 OR b.sender_photo_url = $1",
    )
    .bind(source_url)
    .fetch_all(ex)
    .await
}
