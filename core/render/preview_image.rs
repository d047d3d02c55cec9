//! The link-preview image of a lead's page (`og:image`): a 1200x630 PNG in the brand's colour
//! with the sender's logo (lps's own copy) or name, who the page is for and their company, and
//! the page's headline. Fonts ship with lps (DejaVu Sans, `fonts/`); every line is fitted to
//! the width (smaller type, then an ellipsis), so no text ever leaves the image.

use std::io::Cursor;

use ab_glyph::{Font, FontRef, PxScale, ScaleFont};
use image::{Rgba, RgbaImage};

use super::contrast::{self, Rgb};

pub const WIDTH: u32 = 1200;
pub const HEIGHT: u32 = 630;
/// Left and right margin.
const MARGIN: f32 = 80.0;
/// A brand without a colour is shown in this one.
const DEFAULT_BRAND: Rgb = [0x14, 0x21, 0x3d];

static BOLD: &[u8] = include_bytes!("fonts/DejaVuSans-Bold.ttf");
static REGULAR: &[u8] = include_bytes!("fonts/DejaVuSans.ttf");

/// What the card shows.
#[derive(Debug, Clone, Default)]
pub struct Card {
    /// `#rrggbb`.
    pub brand_color: Option<String>,
    /// The sender's logo as lps keeps it (PNG), drawn top left.
    pub logo_png: Option<Vec<u8>>,
    /// The sender's company, shown when there is no logo.
    pub from: Option<String>,
    pub first_name: Option<String>,
    pub company: Option<String>,
    pub headline: String,
}

/// The card as PNG.
pub fn render(card: &Card) -> Vec<u8> {
    let brand = card
        .brand_color
        .as_deref()
        .and_then(contrast::parse)
        .unwrap_or(DEFAULT_BRAND);
    let ink = contrast::readable_on(brand);
    let mut canvas =
        RgbaImage::from_pixel(WIDTH, HEIGHT, Rgba([brand[0], brand[1], brand[2], 255]));
    let bold = FontRef::try_from_slice(BOLD).expect("the shipped bold font loads");
    let regular = FontRef::try_from_slice(REGULAR).expect("the shipped font loads");
    let width = WIDTH as f32 - 2.0 * MARGIN;

    let logo = card
        .logo_png
        .as_deref()
        .and_then(|png| image::load_from_memory(png).ok());
    match (logo, &card.from) {
        (Some(logo), _) => {
            let logo = logo.resize(420, 96, image::imageops::FilterType::Lanczos3);
            image::imageops::overlay(&mut canvas, &logo.to_rgba8(), MARGIN as i64, 64);
        }
        (None, Some(from)) => {
            draw_line(&mut canvas, &bold, from, 40.0, 28.0, 110.0, width, ink);
        }
        (None, None) => {}
    }
    let who = match &card.first_name {
        Some(name) => format!("For {name}"),
        None => "For you".to_owned(),
    };
    draw_line(&mut canvas, &bold, &who, 96.0, 48.0, 330.0, width, ink);
    if let Some(company) = &card.company {
        draw_line(
            &mut canvas,
            &regular,
            company,
            52.0,
            32.0,
            410.0,
            width,
            ink,
        );
    }
    draw_line(
        &mut canvas,
        &regular,
        &card.headline,
        36.0,
        24.0,
        540.0,
        width,
        ink,
    );

    let mut png = Vec::new();
    image::DynamicImage::ImageRgba8(canvas)
        .write_to(&mut Cursor::new(&mut png), image::ImageFormat::Png)
        .expect("a PNG is written to memory");
    png
}

/// The width of `text` at `size`.
fn text_width(font: &FontRef<'_>, text: &str, size: f32) -> f32 {
    let scaled = font.as_scaled(PxScale::from(size));
    let mut width = 0.0;
    let mut previous = None;
    for c in text.chars() {
        let id = scaled.glyph_id(c);
        if let Some(previous) = previous {
            width += scaled.kern(previous, id);
        }
        width += scaled.h_advance(id);
        previous = Some(id);
    }
    width
}

/// `text` fitted to `width`: the largest size from `size` down to `smallest` that fits, then
/// cut with an ellipsis.
fn fitted(font: &FontRef<'_>, text: &str, size: f32, smallest: f32, width: f32) -> (String, f32) {
    let text: String = text.chars().filter(|c| !c.is_control()).collect();
    let mut size = size;
    while size > smallest && text_width(font, &text, size) > width {
        size -= 2.0;
    }
    let size = size.max(smallest);
    if text_width(font, &text, size) <= width {
        return (text, size);
    }
    let mut chars: Vec<char> = text.chars().collect();
    while !chars.is_empty() {
        chars.pop();
        let cut: String = chars.iter().collect::<String>().trim_end().to_owned() + "\u{2026}";
        if text_width(font, &cut, size) <= width {
            return (cut, size);
        }
    }
    (String::new(), size)
}

/// Draws one line of text with its baseline at `baseline`, fitted to `width`.
#[allow(clippy::too_many_arguments)]
fn draw_line(
    canvas: &mut RgbaImage,
    font: &FontRef<'_>,
    text: &str,
    size: f32,
    smallest: f32,
    baseline: f32,
    width: f32,
    color: Rgb,
) {
    let (text, size) = fitted(font, text, size, smallest, width);
    let scaled = font.as_scaled(PxScale::from(size));
    let mut x = MARGIN;
    let mut previous = None;
    for c in text.chars() {
        let id = scaled.glyph_id(c);
        if let Some(previous) = previous {
            x += scaled.kern(previous, id);
        }
        let glyph = id.with_scale_and_position(size, ab_glyph::point(x, baseline));
        x += scaled.h_advance(id);
        previous = Some(id);
        let Some(outlined) = font.outline_glyph(glyph) else {
            continue;
        };
        let bounds = outlined.px_bounds();
        outlined.draw(|gx, gy, coverage| {
            let px = bounds.min.x as i64 + i64::from(gx);
            let py = bounds.min.y as i64 + i64::from(gy);
            if px < 0 || py < 0 || px >= i64::from(WIDTH) || py >= i64::from(HEIGHT) {
                return;
            }
            let pixel = canvas.get_pixel_mut(px as u32, py as u32);
            for (under, over) in pixel.0.iter_mut().zip(color) {
                let (from, to) = (f32::from(*under), f32::from(over));
                *under = (from + (to - from) * coverage.clamp(0.0, 1.0)) as u8;
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_card_is_a_1200_by_630_png_that_differs_by_lead() {
        let card = |name: &str| Card {
            brand_color: Some("#ffd400".into()),
            from: Some("Northwind".into()),
            first_name: Some(name.into()),
            company: Some("Engines & Co".into()),
            headline: "Hi there, this page is yours.".into(),
            ..Default::default()
        };
        let ada = render(&card("Ada"));
        let grace = render(&card("Grace"));
        let decoded = image::load_from_memory(&ada).unwrap();
        assert_eq!((decoded.width(), decoded.height()), (WIDTH, HEIGHT));
        assert_ne!(ada, grace);
    }

    #[test]
    fn no_line_ever_leaves_the_card() {
        let font = FontRef::try_from_slice(BOLD).unwrap();
        let long = "W".repeat(500);
        let (text, size) = fitted(&font, &long, 96.0, 48.0, 1040.0);
        assert!(text.ends_with('\u{2026}'), "{text}");
        assert!(text_width(&font, &text, size) <= 1040.0);
        let (short, size) = fitted(&font, "For Ada", 96.0, 48.0, 1040.0);
        assert_eq!((short.as_str(), size), ("For Ada", 96.0));
        // Nothing at all fits nothing: empty, not a panic.
        assert_eq!(fitted(&font, "Ada", 96.0, 48.0, 1.0).0, "");
    }
}
