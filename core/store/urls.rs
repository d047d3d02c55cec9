//! Database URLs: SQLite's file (created unless told otherwise, its folder checked first) and
//! any URL as it may be logged (the password hidden).

/// The file a `sqlite://` URL names.
pub fn sqlite_path(url: &str) -> &str {
    let rest = url
        .strip_prefix("sqlite://")
        .or_else(|| url.strip_prefix("sqlite:"))
        .unwrap_or(url);
    rest.split('?').next().unwrap_or(rest)
}

/// The file a SQLite URL names, if it names one (not an in-memory database).
pub(super) fn sqlite_file(url: &str) -> Option<std::path::PathBuf> {
    let path = sqlite_path(url);
    (!path.is_empty() && path != ":memory:" && !url.contains("mode=memory"))
        .then(|| std::path::PathBuf::from(path))
}

/// Names the cause when a SQLite file cannot be used: its directory is missing, or (when not
/// to be created) the file itself.
pub(super) fn check_sqlite_path(url: &str, create: bool) -> anyhow::Result<()> {
    let Some(path) = sqlite_file(url) else {
        return Ok(());
    };
    if !create && !path.exists() {
        anyhow::bail!(
            "the database {} does not exist: start `lps serve --database-url {url}` once, or \
             run `lps admin bootstrap --database-url {url}`",
            path.display()
        );
    }
    let directory = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => std::path::Path::new("."),
    };
    if !directory.is_dir() {
        anyhow::bail!(
            "cannot create the SQLite database {}: the directory {} does not exist",
            path.display(),
            directory.display()
        );
    }
    Ok(())
}

/// Adds `mode=rwc` (create the file if missing) unless the URL already chooses a mode.
pub(super) fn sqlite_url(url: &str) -> String {
    if url.contains("mode=") {
        url.to_owned()
    } else if url.contains('?') {
        format!("{url}&mode=rwc")
    } else {
        format!("{url}?mode=rwc")
    }
}

/// The URL without its password, for logs and error messages.
pub fn redact(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme_end), Some(at)) if at > scheme_end => {
            let credentials = &url[scheme_end + 3..at];
            match credentials.split_once(':') {
                Some((user, _password)) => {
                    format!("{}{user}:***{}", &url[..scheme_end + 3], &url[at..])
                }
                None => url.to_owned(),
            }
        }
        _ => url.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sqlite_urls_create_their_file_unless_told_otherwise() {
        assert_eq!(sqlite_url("sqlite://lps.db"), "sqlite://lps.db?mode=rwc");
        assert_eq!(
            sqlite_url("sqlite://a.db?x=1"),
            "sqlite://a.db?x=1&mode=rwc"
        );
        assert_eq!(sqlite_url("sqlite://a.db?mode=ro"), "sqlite://a.db?mode=ro");
    }

    #[test]
    fn passwords_never_reach_logs() {
        assert_eq!(
            redact("postgres://me:secret@127.0.0.1/db"),
            "postgres://me:***@127.0.0.1/db"
        );
        assert_eq!(redact("sqlite://lps.db"), "sqlite://lps.db");
    }
}
