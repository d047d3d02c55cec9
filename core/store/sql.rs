//! SQL text both databases accept, built where a statement's shape depends on its input:
//! multi-row statements (bound in linear time on SQLite, kept per shape), placeholder lists,
//! `LIKE` patterns, status lists, and the check that ids belong to a workspace.

use std::sync::Arc;

use sqlx::AnyPool;

/// Status names as an SQL list (`'queued', 'running'`), for `status IN (...)`. The names are
/// the code's own constants, never input.
pub(crate) fn status_list(statuses: &[&str]) -> String {
    statuses
        .iter()
        .map(|status| format!("'{status}'"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// How many rows of `columns` values one multi-row statement carries on this connection (its
/// SQL made with [`bulk_sql`]): one statement is a round trip on PostgreSQL, a parse on SQLite.
pub fn rows_per_statement(conn: &sqlx::AnyConnection, columns: usize) -> usize {
    let params = if is_sqlite(conn) { 3_000 } else { 6_000 };
    (params / columns.max(1)).max(1)
}

/// A multi-row statement's SQL as this connection binds it in linear time.
///
/// sqlx binds each SQLite parameter by asking for its name, which SQLite finds by walking the
/// list of named (`$n`) parameters: binding grows with the square of their count (a
/// 4,800-parameter insert spent ~90 µs a row on it). Anonymous `?` parameters have no names, so
/// on SQLite the `$n` become `?` when they appear once each, in order; otherwise (and on
/// PostgreSQL) the SQL is unchanged.
pub fn bulk_sql(conn: &sqlx::AnyConnection, sql: String) -> sqlx::AssertSqlSafe<String> {
    if is_sqlite(conn) {
        sqlx::AssertSqlSafe(anonymous_placeholders(&sql).unwrap_or(sql))
    } else {
        sqlx::AssertSqlSafe(sql)
    }
}

/// How a multi-row insert begins on this connection: `INSERT OR FAIL INTO` on SQLite, `INSERT
/// INTO` on PostgreSQL.
///
/// A statement that writes several rows inside a transaction and may stop at a constraint
/// (the default `OR ABORT`) makes SQLite copy every page it is about to change into a
/// statement journal first, to undo the statement alone. lps never goes on with a transaction
/// after a failed statement (the error ends it and it rolls back whole), so that undo is never
/// used; `OR FAIL` stops at a constraint the same way without keeping it. Inserting beacons
/// into `page_events` and its five indexes 100 rows a statement, 5,000 a transaction, went
/// from ~45k to ~75k rows a second (benches/README.md). Only for statements in a transaction
/// that rolls back on error: on its own, a statement stopped midway would keep its first rows.
pub fn insert_into(conn: &sqlx::AnyConnection) -> &'static str {
    if is_sqlite(conn) {
        "INSERT OR FAIL INTO"
    } else {
        "INSERT INTO"
    }
}

/// A multi-row insert's SQL, `{insert_into} {table} VALUES (...), ... {tail}` with `rows` rows of
/// `columns` parameters ([`insert_into`]: in a transaction that rolls back on error), as
/// [`bulk_sql`] gives it, built once per shape and kept. `table` is the table and its columns,
/// `page_events (workspace_id, ...)`.
///
/// A 1,000-lead batch of an import inserts thousands of parameters in a few shapes over and
/// over; writing their placeholders and then rewriting them for SQLite was ~3% of an import's
/// CPU. The kept text depends on nothing but the arguments and the database, so a kept one
/// is always the one that would be built. At most [`KEPT_INSERT_SHAPES`] are kept (a full set
/// is dropped, to be built again); a shape is at most [`rows_per_statement`]'s parameters
/// (~7 bytes each), so the set stays under ~1.5 MiB.
pub fn multi_row_insert(
    conn: &sqlx::AnyConnection,
    table: &'static str,
    rows: usize,
    columns: usize,
    tail: &'static str,
) -> sqlx::AssertSqlSafe<Arc<str>> {
    use std::collections::HashMap;
    use std::sync::{LazyLock, Mutex, PoisonError};
    type Shape = (&'static str, usize, usize, &'static str, bool);
    static KEPT: LazyLock<Mutex<HashMap<Shape, Arc<str>>>> = LazyLock::new(Default::default);
    let shape = (table, rows, columns, tail, is_sqlite(conn));
    if let Some(sql) = KEPT
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .get(&shape)
    {
        return sqlx::AssertSqlSafe(sql.clone());
    }
    let sql = format!(
        "{} {table} VALUES {} {tail}",
        insert_into(conn),
        placeholder_rows(rows, columns, 1, &[])
    );
    let sql: Arc<str> = bulk_sql(conn, sql).0.into();
    let mut shapes = KEPT.lock().unwrap_or_else(PoisonError::into_inner);
    if shapes.len() >= KEPT_INSERT_SHAPES {
        shapes.clear();
    }
    shapes.insert(shape, sql.clone());
    sqlx::AssertSqlSafe(sql)
}

/// How many multi-row insert shapes [`multi_row_insert`] keeps.
const KEPT_INSERT_SHAPES: usize = 32;

pub(super) fn is_sqlite(conn: &sqlx::AnyConnection) -> bool {
    conn.backend_name() == "SQLite"
}

/// `sql` with `$1`, `$2`, ... replaced by `?`, if they appear exactly in that order and nothing
/// else in it looks like a placeholder.
fn anonymous_placeholders(sql: &str) -> Option<String> {
    if sql.contains(['?', '\'']) {
        return None;
    }
    let mut out = String::with_capacity(sql.len());
    let mut expected = 1usize;
    let mut rest = sql;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let digits = rest[at + 1..]
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len() - at - 1);
        let number: usize = rest[at + 1..at + 1 + digits].parse().ok()?;
        if number != expected {
            return None;
        }
        expected += 1;
        out.push('?');
        rest = &rest[at + 1 + digits..];
    }
    out.push_str(rest);
    Some(out)
}

/// The tables whose rows belong to a workspace, for [`ids_in_workspace`].
#[derive(Debug, Clone, Copy)]
pub enum WorkspaceTable {
    Leads,
    Campaigns,
}

/// Which of `ids` are rows of `table` in the workspace, in ascending order. Asked in chunks, so
/// any number of ids works on both databases.
pub async fn ids_in_workspace(
    pool: &AnyPool,
    table: WorkspaceTable,
    workspace_id: i64,
    ids: &[i64],
) -> sqlx::Result<Vec<i64>> {
    let table = match table {
        WorkspaceTable::Leads => "leads",
        WorkspaceTable::Campaigns => "campaigns",
    };
    let mut found = Vec::with_capacity(ids.len());
    for chunk in ids.chunks(200) {
        let sql = format!(
            "SELECT id FROM {table} WHERE workspace_id = $1 AND id IN ({})",
            placeholder_list(chunk.len(), 2)
        );
        let mut query = sqlx::query_scalar::<_, i64>(sqlx::AssertSqlSafe(sql)).bind(workspace_id);
        for id in chunk {
            query = query.bind(*id);
        }
        found.extend(query.fetch_all(pool).await?);
    }
    found.sort_unstable();
    found.dedup();
    Ok(found)
}

/// `$first, $first+1, ...`: `count` numbered placeholders for an `IN (...)` list.
pub fn placeholder_list(count: usize, first: usize) -> String {
    (first..first + count)
        .map(|n| format!("${n}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `($1, $2), ($3, $4), ...`: `rows` tuples of `columns` numbered placeholders, for multi-row
/// `VALUES`. `casts` (one per column, or empty) wraps each in `CAST(... AS type)`, which
/// PostgreSQL needs where nothing else tells it a parameter's type.
pub fn placeholder_rows(rows: usize, columns: usize, first: usize, casts: &[&str]) -> String {
    use std::fmt::Write;
    // One buffer for the whole list: a bulk insert of 1,000 rows has thousands of cells.
    let mut out = String::with_capacity(rows * columns * 8);
    for row in 0..rows {
        out.push_str(if row == 0 { "(" } else { ", (" });
        for column in 0..columns {
            if column > 0 {
                out.push_str(", ");
            }
            let n = first + row * columns + column;
            let _ = match casts.get(column) {
                Some(ty) => write!(out, "CAST(${n} AS {ty})"),
                None => write!(out, "${n}"),
            };
        }
        out.push(')');
    }
    out
}

/// `%text%` in lower case with LIKE's wildcards escaped, for `LOWER(col) LIKE $n ESCAPE '\'`.
pub fn like_pattern(text: &str) -> String {
    let escaped = text
        .to_lowercase()
        .replace('\\', "\\\\")
        .replace('%', "\\%")
        .replace('_', "\\_");
    format!("%{escaped}%")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_in_order_become_anonymous() {
        assert_eq!(
            anonymous_placeholders("INSERT INTO t VALUES ($1, CAST($2 AS TEXT)), ($3, $4)")
                .as_deref(),
            Some("INSERT INTO t VALUES (?, CAST(? AS TEXT)), (?, ?)")
        );
        assert_eq!(
            anonymous_placeholders("SELECT 1").as_deref(),
            Some("SELECT 1")
        );
        // Repeated, out of order or beside literals: left as they are.
        assert_eq!(anonymous_placeholders("VALUES ($1, $1)"), None);
        assert_eq!(anonymous_placeholders("VALUES ($2, $1)"), None);
        assert_eq!(anonymous_placeholders("VALUES ($1, 'a?')"), None);
        assert_eq!(anonymous_placeholders("VALUES ($1, $x)"), None);
    }

    #[test]
    fn placeholders_number_on_from_the_first() {
        assert_eq!(placeholder_list(3, 2), "$2, $3, $4");
        assert_eq!(placeholder_rows(2, 2, 1, &[]), "($1, $2), ($3, $4)");
        assert_eq!(
            placeholder_rows(1, 2, 5, &["BIGINT", "TEXT"]),
            "(CAST($5 AS BIGINT), CAST($6 AS TEXT))"
        );
    }

    #[test]
    fn like_patterns_match_wildcards_literally() {
        assert_eq!(like_pattern("50%_Off\\"), "%50\\%\\_off\\\\%");
    }
}
