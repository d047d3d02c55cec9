//! Whether a beacon (or a form submission) comes from automation, by its browser alone:
//! `navigator.webdriver`, a headless browser, a bot's or a mail scanner's user agent, or none.

use std::sync::LazyLock;

static BOTS: LazyLock<isbot::Bots> = LazyLock::new(isbot::Bots::default);

/// User agents whose verdict is kept: a browser's user agent is the same for every beacon of
/// every visit it makes, and people's browsers are few, so most beacons find theirs here
/// instead of running isbot's expressions (a tenth of the recorder's time per beacon).
const VERDICTS_KEPT: usize = 4_096;

/// The longest user agent whose verdict is kept, in bytes: a beacon's is cut to this at the edge
/// (`edge/visitor/beacon_posts.rs`), but a form's or a gRPC caller's is not, and a longer one
/// (no browser sends one) is judged anew each time instead of taking up to 64 KiB here.
const KEPT_USER_AGENT_BYTES: usize = 512;

/// Each kept user agent's verdict (its reason when automation's): at most [`VERDICTS_KEPT`] of
/// at most [`KEPT_USER_AGENT_BYTES`], ~2.5 MiB whatever strangers send; one seen once is
/// evicted first.
static VERDICTS: LazyLock<quick_cache::sync::Cache<Box<str>, Option<String>>> =
    LazyLock::new(|| quick_cache::sync::Cache::new(VERDICTS_KEPT));

/// Why a beacon is automation's, if it is: `navigator.webdriver`, a headless browser, a bot's
/// or a mail scanner's user agent, or none at all.
pub fn automation_reason(user_agent: &str, webdriver: bool) -> Option<String> {
    if webdriver {
        return Some("navigator.webdriver is set (browser automation)".to_owned());
    }
    if user_agent.len() > KEPT_USER_AGENT_BYTES {
        return user_agent_reason(user_agent);
    }
    if let Some(verdict) = VERDICTS.get(user_agent) {
        return verdict;
    }
    let verdict = user_agent_reason(user_agent);
    VERDICTS.insert(user_agent.into(), verdict.clone());
    verdict
}

/// Why a user agent is automation's, if it is.
fn user_agent_reason(user_agent: &str) -> Option<String> {
    if user_agent.trim().is_empty() {
        return Some("no user agent".to_owned());
    }
    if user_agent.contains("HeadlessChrome") {
        return Some("headless browser (HeadlessChrome)".to_owned());
    }
    if let Some(name) = SCANNER_SIGNATURES
        .iter()
        .find(|name| user_agent.contains(**name))
    {
        return Some(format!("mail scanner's user agent ({name})"));
    }
    BOTS.is_bot(user_agent)
        .then(|| "bot's user agent (isbot list)".to_owned())
}

/// Words in the user agents of link scanners that present themselves (most run an ordinary
/// browser's user agent: those are caught by their networks or their lack of evidence).
const SCANNER_SIGNATURES: &[&str] = &[
    "Barracuda",
    "Mimecast",
    "Proofpoint",
    "urldefense",
    "SafeLinks",
    "Trend Micro",
    "Sophos",
    "Forcepoint",
    "ZScaler",
    "Cisco-Secure",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn automation_is_recognised_and_browsers_are_not() {
        let desktop = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) \
                       Chrome/126.0.0.0 Safari/537.36";
        let is_automation = |ua: &str, webdriver| automation_reason(ua, webdriver).is_some();
        assert!(!is_automation(desktop, false));
        assert!(is_automation(desktop, true), "navigator.webdriver");
        for bot in [
            "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) \
             HeadlessChrome/126.0.0.0 Safari/537.36",
            "Slackbot-LinkExpanding 1.0 (+https://api.slack.com/robots)",
            "LinkedInBot/1.0 (compatible; Mozilla/5.0; Apache-HttpClient +http://www.linkedin.com)",
            "Twitterbot/1.0",
            "facebookexternalhit/1.1 (+http://www.facebook.com/externalhit_uatext.php)",
            "curl/8.5.0",
            "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
            "",
        ] {
            assert!(is_automation(bot, false), "{bot}");
        }
    }

    #[test]
    fn a_kept_verdict_is_the_verdict() {
        let (bot, person) = (
            "Slackbot-LinkExpanding 1.0 (+https://api.slack.com/robots) kept",
            "Mozilla/5.0 (X11; Linux x86_64; kept) AppleWebKit/537.36 Chrome/126.0.0.0",
        );
        for _ in 0..2 {
            assert_eq!(
                automation_reason(bot, false).as_deref(),
                Some("bot's user agent (isbot list)")
            );
            assert_eq!(automation_reason(person, false), None);
            // navigator.webdriver is the beacon's, not the user agent's: never kept.
            assert!(automation_reason(person, true).is_some());
        }
        assert!(
            VERDICTS
                .get(person)
                .is_some_and(|verdict| verdict.is_none())
        );
    }

    #[test]
    fn strangers_user_agents_keep_the_verdicts_bounded() {
        for n in 0..VERDICTS_KEPT * 3 {
            let made_up = format!("Mozilla/5.0 (made up {n})");
            assert_eq!(automation_reason(&made_up, false), None);
        }
        assert!(VERDICTS.len() <= VERDICTS_KEPT);
        assert!(automation_reason("curl/8.5.0", false).is_some());
    }

    #[test]
    fn an_overlong_user_agent_is_judged_but_not_kept() {
        let long_bot = format!("curl/8.5.0 {}", "x".repeat(KEPT_USER_AGENT_BYTES));
        let long_person = format!("Mozilla/5.0 (long) {}", "y".repeat(60 * 1024));
        for _ in 0..2 {
            assert!(automation_reason(&long_bot, false).is_some());
            assert_eq!(automation_reason(&long_person, false), None);
        }
        assert!(VERDICTS.get(long_bot.as_str()).is_none());
        assert!(VERDICTS.get(long_person.as_str()).is_none());
    }
}
