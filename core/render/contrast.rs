//! Colours a page derives from a brand colour so that text stays readable whatever the brand
//! (WCAG 2.x relative luminance and contrast ratio): the text colour on the brand, and the
//! brand darkened for text on white.

/// An opaque colour.
pub type Rgb = [u8; 3];

const WHITE: Rgb = [255, 255, 255];
/// Near-black text (pure black reads harsh; this still contrasts at least 4.5:1 with any
/// colour white fails on).
const INK: Rgb = [17, 17, 17];
/// WCAG AA for normal text.
const READABLE: f64 = 4.5;

/// `#rgb`, `#rgba`, `#rrggbb` or `#rrggbbaa` as an opaque colour (alpha ignored: pages show
/// the brand as a solid colour).
pub fn parse(hex: &str) -> Option<Rgb> {
    let hex = hex.trim().strip_prefix('#')?;
    let digits: Vec<u8> = hex
        .chars()
        .map(|c| c.to_digit(16).map(|d| d as u8))
        .collect::<Option<_>>()?;
    match digits.len() {
        3 | 4 => Some([digits[0] * 17, digits[1] * 17, digits[2] * 17]),
        6 | 8 => Some([
            digits[0] * 16 + digits[1],
            digits[2] * 16 + digits[3],
            digits[4] * 16 + digits[5],
        ]),
        _ => None,
    }
}

/// `#rrggbb`.
pub fn hex(color: Rgb) -> String {
    format!("#{:02x}{:02x}{:02x}", color[0], color[1], color[2])
}

fn luminance(color: Rgb) -> f64 {
    let channel = |c: u8| {
        let c = f64::from(c) / 255.0;
        if c <= 0.039_28 {
            c / 12.92
        } else {
            ((c + 0.055) / 1.055).powf(2.4)
        }
    };
    0.2126 * channel(color[0]) + 0.7152 * channel(color[1]) + 0.0722 * channel(color[2])
}

/// The contrast ratio of two colours, 1 to 21.
pub fn ratio(a: Rgb, b: Rgb) -> f64 {
    let (la, lb) = (luminance(a), luminance(b));
    let (light, dark) = if la > lb { (la, lb) } else { (lb, la) };
    (light + 0.05) / (dark + 0.05)
}

/// White or near-black, whichever reads better on `background`.
pub fn readable_on(background: Rgb) -> Rgb {
    if ratio(background, WHITE) >= ratio(background, INK) {
        WHITE
    } else {
        INK
    }
}

/// `color`, darkened step by step until it reads on white at 4.5:1.
pub fn readable_on_white(color: Rgb) -> Rgb {
    let mut current = color;
    for _ in 0..20 {
        if ratio(current, WHITE) >= READABLE {
            return current;
        }
        current = current.map(|c| (f64::from(c) * 0.85) as u8);
    }
    INK
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn any_brand_colour_gives_readable_text_on_it_and_on_white() {
        for brand in [
            "#ffd400", "#0f766e", "#14213d", "#ffffff", "#000", "#808080", "#ff0000",
        ] {
            let color = parse(brand).unwrap();
            let on = readable_on(color);
            assert!(
                ratio(color, on) >= READABLE,
                "{brand}: {}",
                ratio(color, on)
            );
            let text = readable_on_white(color);
            assert!(ratio(text, WHITE) >= READABLE, "{brand}");
        }
        assert_eq!(hex(readable_on(parse("#ffd400").unwrap())), "#111111");
        assert_eq!(hex(readable_on(parse("#14213d").unwrap())), "#ffffff");
        // Already readable colours are kept.
        assert_eq!(hex(readable_on_white(parse("#14213d").unwrap())), "#14213d");
    }

    #[test]
    fn short_and_alpha_forms_are_read_as_opaque_colours() {
        assert_eq!(parse("#0f8"), Some([0, 255, 136]));
        assert_eq!(parse("#0f78"), Some([0, 255, 119]));
        assert_eq!(parse("#0f766e80"), Some([15, 118, 110]));
        assert_eq!(parse("teal"), None);
        assert_eq!(parse("#12345"), None);
    }

    #[test]
    fn the_ratio_matches_wcag_reference_values() {
        assert!((ratio(WHITE, [0, 0, 0]) - 21.0).abs() < 1e-9);
        assert!((ratio(WHITE, WHITE) - 1.0).abs() < 1e-9);
        // #767676 is the classic 4.54:1 grey on white.
        assert!((ratio([0x76, 0x76, 0x76], WHITE) - 4.54).abs() < 0.01);
    }
}
