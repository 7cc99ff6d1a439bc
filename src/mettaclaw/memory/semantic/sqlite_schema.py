"""The semantic store's SQLite tables and indexes (sqlite_store.py reads and writes them): records with
their searchable columns beside the JSON of the whole record, tags, source episodes, FTS5 text, typed
edges, relation types, the write log of versions, meta values and the queue of vectors not yet indexed.
"""

SCHEMA = """
CREATE TABLE IF NOT EXISTS records (
    id TEXT PRIMARY KEY, kind TEXT NOT NULL, name TEXT, name_norm TEXT, content TEXT NOT NULL,
    content_key TEXT, category TEXT, confidence REAL, valid_from REAL, valid_to REAL, recorded_at REAL,
    lineage TEXT, subject TEXT, relation TEXT, data TEXT NOT NULL, embedding BLOB);
CREATE INDEX IF NOT EXISTS records_key ON records(content_key);
CREATE INDEX IF NOT EXISTS records_name ON records(name_norm);
CREATE INDEX IF NOT EXISTS records_subject ON records(subject, relation);
CREATE INDEX IF NOT EXISTS records_lineage ON records(lineage);
CREATE INDEX IF NOT EXISTS records_recorded ON records(recorded_at);
CREATE TABLE IF NOT EXISTS record_tags (record_id TEXT NOT NULL, tag TEXT NOT NULL, PRIMARY KEY (record_id, tag));
CREATE INDEX IF NOT EXISTS record_tags_tag ON record_tags(tag);
CREATE TABLE IF NOT EXISTS record_episodes (record_id TEXT NOT NULL, episode_id TEXT NOT NULL,
    PRIMARY KEY (record_id, episode_id));
CREATE INDEX IF NOT EXISTS record_episodes_ep ON record_episodes(episode_id);
CREATE VIRTUAL TABLE IF NOT EXISTS records_fts USING fts5(text);
CREATE TABLE IF NOT EXISTS edges (src TEXT NOT NULL, dst TEXT NOT NULL, type TEXT NOT NULL, weight REAL,
    co_access INTEGER, last_co_access REAL, created_at REAL, src_layer TEXT, dst_layer TEXT,
    PRIMARY KEY (src, dst, type));
CREATE INDEX IF NOT EXISTS edges_dst ON edges(dst);
CREATE TABLE IF NOT EXISTS relation_types (name TEXT PRIMARY KEY, symmetric INTEGER, builtin INTEGER);
CREATE TABLE IF NOT EXISTS versions (seq INTEGER PRIMARY KEY AUTOINCREMENT, record_id TEXT NOT NULL,
    action TEXT, at REAL, snapshot TEXT);
CREATE INDEX IF NOT EXISTS versions_record ON versions(record_id);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT);
CREATE TABLE IF NOT EXISTS vector_queue (id TEXT PRIMARY KEY);
"""
