//! Every file a comment or a document names is there: a path of the project's own written in
//! backticks (`core/...`, `edge/...`, `docs/...`, ...) in a source file or a Markdown document,
//! and every relative link of a document, exists, from the project's root or from the naming
//! file's folder. A file moved or deleted breaks this test until what names it is corrected.

use std::path::{Path, PathBuf};

const TOP_FOLDERS: [&str; 9] = [
    "core/",
    "edge/",
    "docs/",
    "tests/",
    "benches/",
    "migrations/",
    "templates/",
    "proto/",
    ".ci/",
];

fn files(dir: &Path, found: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if path.is_dir() {
            if !matches!(name.as_str(), "target" | "node_modules" | ".git") {
                files(&path, found);
            }
        } else if name.ends_with(".rs") || name.ends_with(".md") {
            found.push(path);
        }
    }
}

/// The project paths `text` names: in backticks, and (for documents) as relative links.
fn named(text: &str, document: bool) -> Vec<String> {
    let mut names = Vec::new();
    for quoted in text.split('`').skip(1).step_by(2) {
        if TOP_FOLDERS.iter().any(|top| quoted.starts_with(top))
            && !quoted.contains(['{', '*', ' ', '<'])
        {
            names.push(quoted.trim_end_matches(['.', '/']).to_owned());
        }
    }
    if document {
        for link in text.split("](").skip(1) {
            let target = link.split(')').next().unwrap_or_default();
            let target = target.split('#').next().unwrap_or_default();
            if !target.is_empty() && !target.contains("://") && !target.starts_with("mailto:") {
                names.push(target.to_owned());
            }
        }
    }
    names
}

#[test]
fn every_file_a_comment_or_document_names_exists() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut found = Vec::new();
    files(root, &mut found);
    let mut missing = Vec::new();
    for file in &found {
        let text = std::fs::read_to_string(file).unwrap();
        let document = file.extension().is_some_and(|e| e == "md");
        for name in named(&text, document) {
            let beside = file.parent().unwrap().join(&name);
            if !root.join(&name).exists() && !beside.exists() {
                missing.push(format!(
                    "{} names {name}",
                    file.strip_prefix(root).unwrap().display()
                ));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "named but not there:\n{}",
        missing.join("\n")
    );
}
