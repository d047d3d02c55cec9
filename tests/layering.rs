//! The source's layering, checked from the files: no two modules of `core/` or `edge/` use
//! each other, directly or around a loop (a parent and its own submodules aside: a folder's
//! `mod.rs` composes its files, and they may read what it defines). The other half of the
//! boundary, that `edge/` cannot name core's insides, the compiler keeps (`pub(crate)`).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// A module's path from its file: `core/domain/jobs.rs` is `domain::jobs` of `core`,
/// `edge/rest/mod.rs` is `rest` of `edge`.
fn module_of(root: &Path, file: &Path) -> Vec<String> {
    let relative = file.strip_prefix(root).expect("under its root");
    let mut parts: Vec<String> = relative
        .iter()
        .map(|part| part.to_string_lossy().into_owned())
        .collect();
    let last = parts.pop().expect("a file name");
    let stem = last.trim_end_matches(".rs");
    if !matches!(stem, "mod" | "lib" | "main") {
        parts.push(stem.to_owned());
    }
    parts
}

fn rust_files(dir: &Path, files: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("a readable directory") {
        let path = entry.expect("an entry").path();
        if path.is_dir() {
            rust_files(&path, files);
        } else if path.extension().is_some_and(|e| e == "rs") {
            files.push(path);
        }
    }
}

/// Every `crate::a::b` and `super::x` a file names (in `use` lines and in paths, braces
/// expanded), as paths from the crate root; trailing item names are trimmed later against the
/// known modules.
fn references(module: &[String], source: &str) -> Vec<Vec<String>> {
    let mut found = Vec::new();
    // Test modules may reach anywhere; comments name what they like.
    let source = source.split("#[cfg(test)]").next().unwrap_or(source);
    let source: String = source
        .lines()
        .filter(|line| !line.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n");
    let source = source.as_str();
    for (start, _) in source.match_indices("crate::") {
        expand(Vec::new(), &source[start + "crate::".len()..], &mut found);
    }
    for (start, _) in source.match_indices("super::") {
        if source[..start].ends_with("super::") {
            continue;
        }
        // `super` is the parent module, however the files are laid out.
        let mut base: Vec<String> = module.to_vec();
        let mut rest = &source[start..];
        while let Some(after) = rest.strip_prefix("super::") {
            base.pop();
            rest = after;
        }
        expand(base, rest, &mut found);
    }
    found
}

/// The paths `text` starts with, below `base`: `a::b::{c, d::e}` is `a::b::c` and `a::b::d::e`.
fn expand(mut base: Vec<String>, text: &str, found: &mut Vec<Vec<String>>) {
    let end = text
        .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
        .unwrap_or(text.len());
    base.extend(
        text[..end]
            .split("::")
            .filter(|w| !w.is_empty())
            .map(str::to_owned),
    );
    let Some(group) = text[end..].strip_prefix('{') else {
        found.push(base);
        return;
    };
    let mut depth = 1;
    let mut piece_start = 0;
    for (at, c) in group.char_indices() {
        match c {
            '{' => depth += 1,
            '}' | ',' if depth == 1 => {
                expand(base.clone(), group[piece_start..at].trim_start(), found);
                piece_start = at + 1;
                if c == '}' {
                    return;
                }
            }
            '}' => depth -= 1,
            _ => {}
        }
    }
}

/// The module graph of one crate root: an edge from a module to every other module it names,
/// ancestors and descendants aside.
fn graph(root: &Path) -> BTreeMap<Vec<String>, BTreeSet<Vec<String>>> {
    let mut files = Vec::new();
    rust_files(root, &mut files);
    let modules: BTreeMap<Vec<String>, PathBuf> = files
        .iter()
        .map(|file| (module_of(root, file), file.clone()))
        .collect();
    let mut edges: BTreeMap<Vec<String>, BTreeSet<Vec<String>>> = BTreeMap::new();
    for (module, file) in &modules {
        let source = std::fs::read_to_string(file).expect("a readable file");
        let mut named = BTreeSet::new();
        for mut path in references(module, &source) {
            while !path.is_empty() && !modules.contains_key(&path) {
                path.pop();
            }
            let related = path.starts_with(module) || module.starts_with(&path);
            if !path.is_empty() && !related {
                named.insert(path);
            }
        }
        edges.insert(module.clone(), named);
    }
    edges
}

/// A loop in the graph, if there is one.
fn find_cycle(edges: &BTreeMap<Vec<String>, BTreeSet<Vec<String>>>) -> Option<Vec<Vec<String>>> {
    fn visit(
        node: &Vec<String>,
        edges: &BTreeMap<Vec<String>, BTreeSet<Vec<String>>>,
        done: &mut BTreeSet<Vec<String>>,
        stack: &mut Vec<Vec<String>>,
    ) -> Option<Vec<Vec<String>>> {
        if let Some(at) = stack.iter().position(|n| n == node) {
            let mut cycle = stack[at..].to_vec();
            cycle.push(node.clone());
            return Some(cycle);
        }
        if done.contains(node) {
            return None;
        }
        stack.push(node.clone());
        for next in edges.get(node).into_iter().flatten() {
            if let Some(cycle) = visit(next, edges, done, stack) {
                return Some(cycle);
            }
        }
        stack.pop();
        done.insert(node.clone());
        None
    }
    let mut done = BTreeSet::new();
    for node in edges.keys() {
        if let Some(cycle) = visit(node, edges, &mut done, &mut Vec::new()) {
            return Some(cycle);
        }
    }
    None
}

fn assert_acyclic(root: &str) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join(root);
    let edges = graph(&root);
    assert!(
        edges.len() > 10,
        "the modules of {} were found",
        root.display()
    );
    if let Some(cycle) = find_cycle(&edges) {
        let names: Vec<String> = cycle.iter().map(|m| m.join("::")).collect();
        panic!("a module cycle: {}", names.join(" -> "));
    }
}

#[test]
fn core_has_no_module_cycle() {
    assert_acyclic("core");
}

#[test]
fn the_edge_has_no_module_cycle() {
    assert_acyclic("edge");
}

#[test]
fn a_cycle_is_found_where_there_is_one() {
    let mut edges = BTreeMap::new();
    let a = vec!["a".to_owned()];
    let b = vec!["b".to_owned()];
    let c = vec!["c".to_owned()];
    edges.insert(a.clone(), BTreeSet::from([b.clone()]));
    edges.insert(b.clone(), BTreeSet::from([c.clone()]));
    edges.insert(c.clone(), BTreeSet::new());
    assert_eq!(find_cycle(&edges), None);
    edges.insert(c.clone(), BTreeSet::from([a.clone()]));
    assert_eq!(find_cycle(&edges), Some(vec![a.clone(), b, c, a]));
}

#[test]
fn references_are_read_as_module_paths() {
    let module = vec!["operations".to_owned(), "caller".to_owned()];
    let source = "use super::error::ApiError;\nuse crate::http::request_log::CredentialId;\n\
                  use crate::{a, b};\n#[cfg(test)]\nmod tests { use crate::hidden; }";
    let found = references(&module, source);
    assert!(found.contains(&vec![
        "operations".to_owned(),
        "error".to_owned(),
        "ApiError".to_owned()
    ]));
    assert!(found.contains(&vec![
        "http".to_owned(),
        "request_log".to_owned(),
        "CredentialId".to_owned()
    ]));
    assert!(found.contains(&vec!["a".to_owned()]));
    assert!(found.contains(&vec!["b".to_owned()]));
    assert!(!found.iter().any(|path| path.contains(&"hidden".to_owned())));
}
