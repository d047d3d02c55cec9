"""The ingest anchor: a plain insert of the benchmark's leads into SQLite with Python's sqlite3.

The same tables as lps's (`leads` and `campaign_leads`, read from the lps database given, with
every index they have), the same journal settings lps uses (WAL, synchronous NORMAL), 1,000 rows
a transaction, each lead attached to one campaign. Prints the leads per second.

    python3 plain_insert.py LPS_DB_FILE WORK_DIR TOTAL
"""
import json
import os
import secrets
import sqlite3
import sys
import time

lps_db, work, total = sys.argv[1], sys.argv[2], int(sys.argv[3])
schema = sqlite3.connect(lps_db).execute(
    "SELECT sql FROM sqlite_master WHERE tbl_name IN ('leads', 'campaign_leads') "
    "AND sql IS NOT NULL ORDER BY type DESC"  # tables before their indexes
).fetchall()
path = os.path.join(work, "plain-insert.db")
for suffix in ("", "-wal", "-shm"):
    if os.path.exists(path + suffix):
        os.remove(path + suffix)
db = sqlite3.connect(path, isolation_level=None)
db.execute("PRAGMA journal_mode = WAL")
db.execute("PRAGMA synchronous = NORMAL")
for (sql,) in schema:
    db.execute(sql)

# The leads the benchmark sends (benches/support/ingest.rs `lead`), as lps stores them.
rows = []
for n in range(total):
    email = f"bench{n}@example.com"
    rows.append((
        1, secrets.token_hex(8), f"Lead{n}", email, email.lower(), f"Company {n % 500}",
        f"company{n % 500}.example", json.dumps({"job_title": "Head of Sales"}), "api",
    ))

started = time.perf_counter()
for start in range(0, total, 1000):
    now = time.time_ns() // 1000
    db.execute("BEGIN")
    first = None
    for row in rows[start:start + 1000]:
        cursor = db.execute(
            "INSERT INTO leads (workspace_id, slug, first_name, email, email_key, company_name,"
            " company_domain, custom_values, source, created_at, updated_at)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            row + (now, now),
        )
        first = first or cursor.lastrowid
    db.executemany(
        "INSERT INTO campaign_leads (campaign_id, lead_id, created_at) VALUES (1, ?, ?)",
        [(lead_id, now) for lead_id in range(first, first + len(rows[start:start + 1000]))],
    )
    db.execute("COMMIT")
elapsed = time.perf_counter() - started
print(f"{total / elapsed:.0f}")
