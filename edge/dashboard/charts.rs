//! Small bar charts of a campaign's days, and a workspace's campaigns side by side (a line
//! each), drawn as inline SVG (no script), each with its figures in words for screen readers
//! and as its caption; over the days a person picks ([`Range`]: the last 7, 30 or 90 days, or
//! from one date to another), counted in their time zone.

use std::collections::BTreeMap;

use jiff::civil::Date;
use lps::proto;
use serde::Serialize;

use super::plural;

/// The most days one chart shows (what core answers at most).
const MOST_DAYS: i64 = 366;
/// The spans a person picks with one click.
const SPANS: [i64; 3] = [7, 30, 90];

/// The days a screen's charts show, from its query (`range=7|30|90`, or `from` and `to` as
/// `YYYY-MM-DD`); the last 30 days by default, or when the query makes no sense (then with a
/// sentence saying so).
#[derive(Debug, Clone, Serialize)]
pub struct Range {
    /// First and last day, in the person's time zone.
    pub from: String,
    pub to: String,
    /// `in the last 30 days`, `from 2026-11-01 to 2026-11-20`.
    pub words: String,
    /// The span picked with one click (7, 30 or 90), if that is what is shown.
    pub span: Option<i64>,
    /// Why the query was not followed.
    pub error: Option<&'static str>,
    /// The one-click spans: (days, whether shown now).
    pub spans: Vec<(i64, bool)>,
}

impl Range {
    /// The range a screen's query asks for, today being today in `zone` (UTC when unknown).
    pub fn of(query: &BTreeMap<String, String>, zone: Option<&str>) -> Self {
        let zone = zone
            .and_then(|z| jiff::tz::TimeZone::get(z).ok())
            .unwrap_or(jiff::tz::TimeZone::UTC);
        let today = jiff::Timestamp::now().to_zoned(zone).date();
        let given = |name: &str| query.get(name).map(|v| v.trim()).filter(|v| !v.is_empty());
        let mut error = None;
        if let (Some(from), Some(to)) = (given("from"), given("to")) {
            match (from.parse::<Date>(), to.parse::<Date>()) {
                (Ok(from), Ok(to)) if from <= to && (to - from).get_days() < MOST_DAYS as i32 => {
                    return Self::between(from, to, None);
                }
                _ => {
                    error = Some(
                        "Those dates make no range of at most 366 days (from the first to the \
                         last, YYYY-MM-DD): the last 30 days are shown.",
                    );
                }
            }
        } else if given("from").is_some() || given("to").is_some() {
            error =
                Some("A range needs both its first and its last day: the last 30 days are shown.");
        }
        let span = match given("range").map(str::parse::<i64>) {
            Some(Ok(days)) if SPANS.contains(&days) => days,
            Some(_) => {
                error = error.or(Some("Pick 7, 30 or 90 days: the last 30 days are shown."));
                30
            }
            None => 30,
        };
        let from = today
            .checked_sub(jiff::Span::new().days(span - 1))
            .unwrap_or(today);
        let mut range = Self::between(from, today, Some(span));
        range.error = error;
        range
    }

    fn between(from: Date, to: Date, span: Option<i64>) -> Self {
        Self {
            from: from.to_string(),
            to: to.to_string(),
            words: match span {
                Some(days) => format!("in the last {days} days"),
                None => format!("from {from} to {to}"),
            },
            span,
            error: None,
            spans: SPANS
                .iter()
                .map(|&days| (days, span == Some(days)))
                .collect(),
        }
    }

    /// Its picker, as the home and campaign screens show it (`templates/range.html`).
    pub fn picker(&self) -> minijinja::Value {
        use minijinja::value::Serde;
        super::SCREENS.part("range.html", minijinja::context! { range => Serde(self) })
    }

    /// The analytics request for a campaign over this range.
    pub fn daily_request(
        &self,
        workspace_id: i64,
        campaign_id: i64,
        time_zone: Option<String>,
    ) -> proto::GetDailyAnalyticsRequest {
        proto::GetDailyAnalyticsRequest {
            workspace_id: Some(workspace_id),
            campaign_id: Some(campaign_id),
            from: Some(self.from.clone()),
            to: Some(self.to.clone()),
            time_zone,
            ..Default::default()
        }
    }
}

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
pub fn chart(days: &[proto::DailyAnalytics], figure: &Figure, range: &Range) -> Chart {
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
        summary: format!("{} {}", plural(total, figure.one, figure.many), range.words),
        bars,
        width: days.len() as i64 * 10,
    }
}

/// Several campaigns' days side by side: a line each, in colours told apart by people who
/// see colours differently (Okabe and Ito's), with a legend naming each and its total.
#[derive(Serialize)]
pub struct Series {
    pub title: String,
    pub summary: String,
    pub lines: Vec<Line>,
    /// The drawing's width (10 per day) and height.
    pub width: i64,
    pub height: i64,
}

#[derive(Serialize)]
pub struct Line {
    pub name: String,
    pub colour: &'static str,
    /// The SVG polyline's points.
    pub points: String,
    /// `Autumn: 12 views`.
    pub label: String,
}

const PALETTE: [&str; 8] = [
    "#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#F0E442",
];
const SERIES_HEIGHT: i64 = 96;

/// The figure of each campaign's days as a line, the highest day of any reaching the top;
/// `None` for fewer than two campaigns (a tile's bars say it all).
pub fn series(
    campaigns: &[(String, Vec<proto::DailyAnalytics>)],
    figure: &Figure,
    range: &Range,
) -> Option<Series> {
    if campaigns.len() < 2 {
        return None;
    }
    let most = campaigns
        .iter()
        .flat_map(|(_, days)| days.iter().map(figure.of))
        .max()
        .unwrap_or(0)
        .max(1);
    let width = campaigns.iter().map(|(_, d)| d.len()).max().unwrap_or(0) as i64 * 10;
    let lines: Vec<Line> = campaigns
        .iter()
        .enumerate()
        .map(|(i, (name, days))| {
            let total: i64 = days.iter().map(figure.of).sum();
            let points = days
                .iter()
                .enumerate()
                .map(|(x, day)| {
                    let y = SERIES_HEIGHT - (figure.of)(day) * (SERIES_HEIGHT - 4) / most - 2;
                    format!("{},{y}", x as i64 * 10 + 4)
                })
                .collect::<Vec<_>>()
                .join(" ");
            Line {
                name: name.clone(),
                colour: PALETTE[i % PALETTE.len()],
                points,
                label: format!("{name}: {}", plural(total, figure.one, figure.many)),
            }
        })
        .collect();
    let summary = lines
        .iter()
        .map(|l| l.label.clone())
        .collect::<Vec<_>>()
        .join("; ");
    Some(Series {
        title: format!("{} per day, by campaign, {}", figure.title, range.words),
        summary,
        lines,
        width,
        height: SERIES_HEIGHT,
    })
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
        let range = Range::between(
            "2026-11-20".parse().unwrap(),
            "2026-11-22".parse().unwrap(),
            None,
        );
        let drawn = chart(&days, &VIEWS, &range);
        assert_eq!(drawn.summary, "101 views from 2026-11-20 to 2026-11-22");
        let heights: Vec<i64> = drawn.bars.iter().map(|b| b.height).collect();
        assert_eq!(heights, [0, HEIGHT, 2]);
        assert_eq!(drawn.bars[2].label, "2026-11-22: 1 view");
        assert_eq!(drawn.width, 30);
    }

    fn query(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn a_range_is_a_span_or_two_dates_and_anything_else_the_last_30_days_said_so() {
        let week = Range::of(&query(&[("range", "7")]), Some("Pacific/Kiritimati"));
        assert_eq!(week.span, Some(7));
        assert_eq!(week.words, "in the last 7 days");
        let today = jiff::Timestamp::now()
            .to_zoned(jiff::tz::TimeZone::get("Pacific/Kiritimati").unwrap())
            .date();
        assert_eq!(week.to, today.to_string());
        assert_eq!(
            week.from,
            today
                .checked_sub(jiff::Span::new().days(6))
                .unwrap()
                .to_string()
        );
        assert_eq!(week.spans, [(7, true), (30, false), (90, false)]);
        let dates = Range::of(
            &query(&[("from", "2026-11-01"), ("to", "2026-11-03")]),
            None,
        );
        assert_eq!(
            (dates.span, dates.words.as_str()),
            (None, "from 2026-11-01 to 2026-11-03")
        );
        for bad in [
            query(&[("range", "8")]),
            query(&[("from", "2026-11-03"), ("to", "2026-11-01")]),
            query(&[("from", "2025-01-01"), ("to", "2026-11-01")]),
            query(&[("from", "yesterday"), ("to", "2026-11-01")]),
            query(&[("from", "2026-11-01")]),
        ] {
            let shown = Range::of(&bad, None);
            assert_eq!(shown.span, Some(30), "{bad:?}");
            assert!(shown.error.is_some(), "{bad:?}");
        }
        assert!(Range::of(&query(&[]), None).error.is_none());
    }

    #[test]
    fn campaigns_side_by_side_share_one_scale() {
        let days = |views: &[i64]| -> Vec<proto::DailyAnalytics> {
            views
                .iter()
                .map(|&views| proto::DailyAnalytics {
                    views,
                    ..Default::default()
                })
                .collect()
        };
        let range = Range::of(&query(&[]), None);
        assert!(series(&[("One".into(), days(&[1]))], &VIEWS, &range).is_none());
        let drawn = series(
            &[
                ("Autumn".into(), days(&[0, 4])),
                ("Spring".into(), days(&[2, 1])),
            ],
            &VIEWS,
            &range,
        )
        .unwrap();
        assert_eq!(drawn.lines[0].points, "4,94 14,2");
        assert_eq!(drawn.lines[1].points, "4,48 14,71");
        assert_eq!(drawn.summary, "Autumn: 4 views; Spring: 3 views");
        assert_ne!(drawn.lines[0].colour, drawn.lines[1].colour);
    }
}
