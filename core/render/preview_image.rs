//! The link-preview image of a lead's page (`og:image`): a 1200x630 PNG in the brand's colour
//! with the sender's logo (lps's own copy) or name, who the page is for and their company, and
//! the page's headline. Fonts ship with lps (DejaVu Sans, `fonts/`); every line is fitted to
//! the width (smaller type, then an ellipsis), so no text ever leaves the image.

use std::io::Cursor;

use ab_glyph::{Font, FontRef, PxScale, ScaleFont};
use image::codecs::png::{CompressionType, FilterType as PngFilter, PngEncoder};
use image::{ImageEncoder, Rgba, RgbaImage};

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
    let brand = brand(card.brand_color.as_deref());
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

/// A card of the brand's colour alone (`#rrggbb`), with nothing drawn on it: what stands in
/// when no other card can be made in time. Cheap enough for any thread: each row filtered to
/// zeros compresses to almost nothing (15 KB, about a millisecond in a release build; without
/// the filter the fast compressor stores all 2.2 MB).
pub fn plain(brand_color: Option<&str>) -> Vec<u8> {
    let [r, g, b] = brand(brand_color);
    let canvas = image::RgbImage::from_pixel(WIDTH, HEIGHT, image::Rgb([r, g, b]));
    let mut png = Vec::new();
    PngEncoder::new_with_quality(&mut png, CompressionType::Fast, PngFilter::Sub)
        .write_image(&canvas, WIDTH, HEIGHT, image::ExtendedColorType::Rgb8)
        .expect("a PNG is written to memory");
    png
}

/// The brand's colour, or lps's own for a brand without one.
fn brand(color: Option<&str>) -> Rgb {
    color.and_then(contrast::parse).unwrap_or(DEFAULT_BRAND)
}

/// The most characters one line ever lays out. A line of the narrowest glyphs at the smallest
/// size holds about 160 (`i`, 6.7 px at 24 px, in 1,040 px); the cap is for glyphs of no width
/// (combining marks), which would otherwise let a 10,000-character value be read whole.
const MOST_CHARS: usize = 512;

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
///
/// Only what can show is laid out: the text (control characters dropped) is read once, at the
/// smallest size, until it is an em past the width or [`MOST_CHARS`] long. A text that stops
/// there fits at no size, and its cut is within what was read; a text read to its end is
/// measured at each size. The cut is then found in one pass over the widths of what was read,
/// so the work is bounded by what a line can show, never by the text's length.
fn fitted(font: &FontRef<'_>, text: &str, size: f32, smallest: f32, width: f32) -> (String, f32) {
    let small = font.as_scaled(PxScale::from(smallest));
    let mut shown: Vec<char> = Vec::new();
    // `ends[k]`: the width of `shown[..k]` at the smallest size, summed as `text_width` sums.
    let mut ends: Vec<f32> = vec![0.0];
    let mut ids = Vec::new();
    let mut whole = true;
    let mut line = 0.0;
    for c in text.chars().filter(|c| !c.is_control()) {
        // An em of slack: no kerning pair takes back that much.
        if shown.len() == MOST_CHARS || line > width + smallest {
            whole = false;
            break;
        }
        let id = small.glyph_id(c);
        if let Some(&previous) = ids.last() {
            line += small.kern(previous, id);
        }
        line += small.h_advance(id);
        shown.push(c);
        ids.push(id);
        ends.push(line);
    }
    let read: String = shown.iter().collect();
    let fits = |size: f32| whole && text_width(font, &read, size) <= width;
    let mut size = size;
    while size > smallest && !fits(size) {
        size -= 2.0;
    }
    let size = size.max(smallest);
    if fits(size) {
        return (read, size);
    }
    // `kept[k]`: how many of `shown[..k]` remain once trailing whitespace is trimmed.
    let mut kept = vec![0; shown.len() + 1];
    for k in 1..=shown.len() {
        kept[k] = if shown[k - 1].is_whitespace() {
            kept[k - 1]
        } else {
            k
        };
    }
    let ellipsis = small.glyph_id('\u{2026}');
    let cut_width = |k: usize| match kept[k] {
        0 => small.h_advance(ellipsis),
        n => ends[n] + small.kern(ids[n - 1], ellipsis) + small.h_advance(ellipsis),
    };
    // A text read to its end is cut by at least one character; one that was not may keep all
    // that was read.
    let longest = if whole { shown.len() } else { shown.len() + 1 };
    match (0..longest).rev().find(|&k| cut_width(k) <= width) {
        Some(k) => {
            let mut cut: String = shown[..kept[k]].iter().collect();
            cut.push('\u{2026}');
            (cut, size)
        }
        None => (String::new(), size),
    }
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
    use std::time::{Duration, Instant};

    use proptest::prelude::*;

    use super::*;
    use crate::domain::lead::MAX_VALUE_CHARS;
    use crate::render::copy::MAX_FILLED_HEADLINE;

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

    #[test]
    fn a_plain_card_is_the_brand_colour_at_the_card_size() {
        let png = plain(Some("#0f766e"));
        assert!(png.len() < 32 * 1024, "{} bytes", png.len());
        let decoded = image::load_from_memory(&png).unwrap().to_rgb8();
        assert_eq!((decoded.width(), decoded.height()), (WIDTH, HEIGHT));
        assert!(decoded.pixels().all(|p| p.0 == [0x0f, 0x76, 0x6e]));
        let default = image::load_from_memory(&plain(None)).unwrap().to_rgb8();
        assert_eq!(default.get_pixel(0, 0).0, DEFAULT_BRAND);
    }

    /// `fitted` as it was (every shorter cut measured whole: quadratic in the text's length),
    /// which the bounded one must still agree with for any text shorter than [`MOST_CHARS`].
    fn fitted_by_measuring_every_cut(
        font: &FontRef<'_>,
        text: &str,
        size: f32,
        smallest: f32,
        width: f32,
    ) -> (String, f32) {
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
            let cut = chars.iter().collect::<String>().trim_end().to_owned() + "\u{2026}";
            if text_width(font, &cut, size) <= width {
                return (cut, size);
            }
        }
        (String::new(), size)
    }

    /// The card's lines as `render` draws them: font, size and smallest size.
    const LINES: [(&[u8], f32, f32); 4] = [
        (BOLD, 40.0, 28.0),
        (BOLD, 96.0, 48.0),
        (REGULAR, 52.0, 32.0),
        (REGULAR, 36.0, 24.0),
    ];

    /// Texts of wide, narrow, kerned, combining, zero-width, missing and control characters.
    fn texts(pieces: usize) -> impl Strategy<Value = String> {
        let piece = prop::sample::select(vec![
            "W", "i", "a", " ", "AV", "To", "LT", "\u{e9}", "e\u{301}", "\u{301}", "\u{200b}",
            "\u{a0}", "\u{4e00}", "\u{7}", "\n", "\u{2026}", "mm", "1", ".",
        ]);
        prop::collection::vec(piece, 0..pieces).prop_map(|pieces| pieces.concat())
    }

    proptest! {
        #[test]
        fn a_fitted_line_never_leaves_the_card_and_a_line_that_fits_is_never_cut(
            text in texts(150),
            line in 0..LINES.len(),
            width in 1.0f32..1100.0,
        ) {
            let (font, size, smallest) = LINES[line];
            let font = FontRef::try_from_slice(font).unwrap();
            let (fit, at) = fitted(&font, &text, size, smallest, width);
            prop_assert!(fit.is_empty() || text_width(&font, &fit, at) <= width);
            prop_assert!((smallest..=size).contains(&at));
            let whole: String = text.chars().filter(|c| !c.is_control()).collect();
            if text_width(&font, &whole, smallest) <= width {
                prop_assert_eq!(&fit, &whole);
            }
            let before = fitted_by_measuring_every_cut(&font, &text, size, smallest, width);
            prop_assert_eq!((fit, at), before);
        }
    }

    /// The most CPU time one card may take, at the worst input within the documented limits,
    /// in a debug build (a release build takes a tenth of it).
    const CARD_CPU: Duration = Duration::from_secs(1);
    /// The most wall time, for a machine shared with other work.
    const CARD_WALL: Duration = Duration::from_secs(3);

    /// This thread's CPU time.
    fn thread_cpu() -> Duration {
        let mut now = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: `now` is a valid timespec for the call to fill.
        let done = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut now) };
        assert_eq!(done, 0, "the thread's CPU clock is readable");
        Duration::new(now.tv_sec as u64, now.tv_nsec as u32)
    }

    /// A logo as large as lps keeps one (512 px a side, `jobs::assets`), of noise: the costliest
    /// to decode and scale.
    fn largest_logo() -> Vec<u8> {
        let mut state = 0x9e37_79b9_u32;
        let logo = RgbaImage::from_fn(512, 512, |_, _| {
            state ^= state << 13;
            state ^= state >> 17;
            state ^= state << 5;
            Rgba(state.to_le_bytes())
        });
        let mut png = Vec::new();
        image::DynamicImage::ImageRgba8(logo)
            .write_to(&mut Cursor::new(&mut png), image::ImageFormat::Png)
            .unwrap();
        png
    }

    /// The budget of the anonymous `/p/{campaign}/{lead}/og.png`: a lead's first name and
    /// company at the longest a value may be, a headline at the longest its copy may come to
    /// and the largest logo, in every kind of character that costs fitting the most.
    #[test]
    fn the_costliest_card_within_the_documented_limits_renders_within_its_budget() {
        let logo = largest_logo();
        let at_longest = |unit: &str, chars: usize| unit.repeat(chars / unit.chars().count());
        let worst = |unit: &str| Card {
            brand_color: Some("#ffd400".into()),
            logo_png: Some(logo.clone()),
            from: None,
            first_name: Some(at_longest(unit, MAX_VALUE_CHARS)),
            company: Some(at_longest(unit, MAX_VALUE_CHARS)),
            headline: at_longest(unit, MAX_FILLED_HEADLINE),
        };
        let mut cards: Vec<(&str, Card)> = [
            ("wide", "W"),
            ("narrow", "i"),
            ("no-width", "\u{301}"),
            ("space", " "),
            ("missing", "\u{4e00}"),
            ("mixed", "Wi \u{301}AV"),
        ]
        .into_iter()
        .map(|(what, unit)| (what, worst(unit)))
        .collect();
        cards.push((
            "no logo, longest sender",
            Card {
                logo_png: None,
                from: Some("W".repeat(255)),
                ..worst("i")
            },
        ));
        for (what, card) in cards {
            let (cpu, wall) = (thread_cpu(), Instant::now());
            let png = render(&card);
            let (cpu, wall) = (thread_cpu() - cpu, wall.elapsed());
            println!(
                "og.png, {what} characters: {:.1} ms CPU, {:.1} ms wall, {} KB",
                cpu.as_secs_f64() * 1e3,
                wall.as_secs_f64() * 1e3,
                png.len() / 1024
            );
            assert!(cpu < CARD_CPU, "{what}: {cpu:?} of CPU");
            assert!(wall < CARD_WALL, "{what}: {wall:?}");
        }
    }
}
