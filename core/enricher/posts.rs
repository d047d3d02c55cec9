//! Recent posts: the RSS or Atom feeds a page links (or is), newest entries first.

use scraper::{Html, Selector};

use super::{EnrichError, Values, collapse};

/// Recent posts kept per feed.
const RECENT_POSTS: usize = 5;

/// Feeds a page links (`<link rel="alternate" type="application/rss+xml|atom+xml">`).
pub(super) fn feed_links(html: &str, base: &reqwest::Url) -> Vec<reqwest::Url> {
    let document = Html::parse_document(html);
    let selector = Selector::parse("link[rel~=alternate][href]").expect("a valid selector");
    document
        .select(&selector)
        .filter(|link| {
            link.value()
                .attr("type")
                .map(str::to_ascii_lowercase)
                .is_some_and(|t| t.contains("rss") || t.contains("atom"))
        })
        .filter_map(|link| base.join(link.value().attr("href")?).ok())
        .collect()
}

/// A feed's newest entries: `(title, link, published)`.
pub(super) struct Posts(Vec<(String, Option<String>, Option<String>)>);

impl Posts {
    pub(super) fn read(body: &str) -> Result<Posts, EnrichError> {
        let feed =
            feed_rs::parser::parse(body.as_bytes()).map_err(|_| EnrichError::FeedUnreadable)?;
        let mut entries: Vec<_> = feed
            .entries
            .into_iter()
            .filter_map(|entry| {
                let title = entry
                    .title
                    .map(|t| collapse(&t.content))
                    .filter(|t| !t.is_empty())?;
                let when = entry.published.or(entry.updated);
                let link = entry.links.first().map(|l| l.href.clone());
                Some((when, title, link))
            })
            .collect();
        entries.sort_by_key(|entry| std::cmp::Reverse(entry.0));
        if entries.is_empty() {
            return Err(EnrichError::FeedEmpty);
        }
        Ok(Posts(
            entries
                .into_iter()
                .take(RECENT_POSTS)
                .map(|(when, title, link)| {
                    (title, link, when.map(|w| w.format("%Y-%m-%d").to_string()))
                })
                .collect(),
        ))
    }

    /// `{whose}_latest_post`, `{whose}_latest_post_url` and `{whose}_recent_posts` (one post
    /// per line: `date title <link>`).
    pub(super) fn into_values(self, whose: &str) -> Values {
        let (latest_post, latest_url, recent) = match whose {
            "person" => (
                "person_latest_post",
                "person_latest_post_url",
                "person_recent_posts",
            ),
            _ => (
                "company_latest_post",
                "company_latest_post_url",
                "company_recent_posts",
            ),
        };
        let lines: Vec<String> = self
            .0
            .iter()
            .map(|(title, link, when)| {
                let mut line = String::new();
                if let Some(when) = when {
                    line.push_str(when);
                    line.push(' ');
                }
                line.push_str(title);
                if let Some(link) = link {
                    line.push_str(&format!(" <{link}>"));
                }
                line
            })
            .collect();
        let first = &self.0[0];
        let mut values = vec![(latest_post, first.0.clone()), (recent, lines.join("\n"))];
        if let Some(link) = &first.1 {
            values.push((latest_url, link.clone()));
        }
        values
    }
}
