//! Small bar charts of a campaign's days, drawn as inline SVG (no script), each with its
//! figures in words for screen readers and as its caption.

use lps::proto;
use serde::Serialize;

use super::plural;

/// A bar chart of one figure per day.
#[derive(Serialize)]
pub struct Chart {
    /// What is counted (`Views`).
    pub title: &'static str,
    /// The total in words (`12 views in the last 30 days`).
    pub summary: String,
    pub bars: Vec<Bar>,
    /// The drawing's width (10 per day).
    pub width: i64,
}

#[derive(Serialize)]
pub struct Bar {
    pub x: i64,
    pub y: i64,
    pub height: i64,
    /// The day and its figure (`2026-11-23: 3 views`).
    pub label: String,
}

/// Height of a chart's drawing area.
const HEIGHT: i64 = 48;

/// What a chart counts: its title, the figure of a day, and the figure's words.
pub struct Figure {
    pub title: &'static str,
    pub of: fn(&proto::DailyAnalytics) -> i64,
    pub one: &'static str,
    pub many: &'static str,
}

pub const VIEWS: Figure = Figure {
    title: "Views",
    of: |d| d.views,
    one: "view",
    many: "views",
};
pub const VISITORS: Figure = Figure {
    title: "Unique visitors",
    of: |d| d.unique_visitors,
    one: "unique visitor",
    many: "unique visitors",
};
pub const CLICKS: Figure = Figure {
    title: "Clicks",
    of: |d| d.clicks,
    one: "click",
    many: "clicks",
};
pub const FORMS: Figure = Figure {
    title: "Form submissions",
    of: |d| d.form_submissions,
    one: "form submission",
    many: "form submissions",
};

/// One figure per day as bars, the highest day filling the height.
pub fn chart(days: &[proto::DailyAnalytics], figure: &Figure) -> Chart {
    let values: Vec<i64> = days.iter().map(figure.of).collect();
    let most = values.iter().copied().max().unwrap_or(0).max(1);
    let total: i64 = values.iter().sum();
    let bars = days
        .iter()
        .zip(&values)
        .enumerate()
        .map(|(i, (day, &value))| {
            // A day with something shows at least a sliver.
            let height = if value == 0 {
                0
            } else {
                (value * HEIGHT / most).max(2)
            };
            Bar {
                x: i as i64 * 10,
                y: HEIGHT - height,
                height,
                label: format!("{}: {}", day.date, plural(value, figure.one, figure.many)),
            }
        })
        .collect();
    Chart {
        title: figure.title,
        summary: format!(
            "{} in the last {} days",
            plural(total, figure.one, figure.many),
            days.len()
        ),
        bars,
        width: days.len() as i64 * 10,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_highest_day_fills_the_chart_and_a_small_one_still_shows() {
        let days: Vec<proto::DailyAnalytics> = [0, 100, 1]
            .into_iter()
            .enumerate()
            .map(|(i, views)| proto::DailyAnalytics {
                date: format!("2026-11-2{i}"),
                views,
                ..Default::default()
            })
            .collect();
        let drawn = chart(&days, &VIEWS);
        assert_eq!(drawn.summary, "101 views in the last 3 days");
        let heights: Vec<i64> = drawn.bars.iter().map(|b| b.height).collect();
        assert_eq!(heights, [0, HEIGHT, 2]);
        assert_eq!(drawn.bars[2].label, "2026-11-22: 1 view");
        assert_eq!(drawn.width, 30);
    }
}
