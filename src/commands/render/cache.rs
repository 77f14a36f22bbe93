//! Parsed templates, shared by every worker thread of the process.
//!
//! Keyed like mustache.js's cache (`template + ':' + tags`): the render command always starts
//! with the default `{{ }}` tags, and so do partials, so the template text alone is the key.
//! An indented partial is a different text, hence its own entry, as in mustache.js.
//!
//! State: a map from text to `Arc<Template>` behind an `RwLock`, with an epoch per entry. Keys
//! are hashed with FxHash, as every call hashes its whole template (SipHash took 7% of a render
//! of the book's 2.4 KB template, FxHash a quarter of that). A hit takes the read lock only,
//! and writes the entry's epoch only when it changed, so hot entries cost readers no shared
//! writes. A miss parses outside any lock, then inserts under the write lock; when two threads
//! race on one text, the first insert wins and both use it. The cache is bounded in entries and
//! bytes: inserting into a full cache evicts the entries with the oldest epoch (the epoch
//! advances on every insert, so it orders entries by last use, coarsely).
//! Failed parses are not cached (mustache.js does not cache them either).

use super::parse::{parse, Node, Template};
use rustc_hash::FxHashMap;
use std::mem::size_of;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock, RwLock};

/// A bounded, thread-safe map from template text to its parse.
pub struct TemplateCache {
    entries: RwLock<Entries>,
    epoch: AtomicU64,
    max_entries: usize,
    max_bytes: usize,
}

#[derive(Default)]
struct Entries {
    map: FxHashMap<Arc<str>, Entry>,
    bytes: usize,
}

struct Entry {
    template: Arc<Template>,
    used: AtomicU64,
    bytes: usize,
}

/// The memory a template holds, roughly: its text, its nodes and their copies of the text.
fn footprint(template: &Template) -> usize {
    let texts: usize = template
        .nodes
        .iter()
        .map(|node| match node {
            Node::Text(text) => text.len(),
            _ => 0,
        })
        .sum();
    template.source.len() + template.nodes.len() * size_of::<Node>() + texts
}

impl TemplateCache {
    /// 4096 templates or 64 MiB, whichever comes first.
    pub fn global() -> &'static TemplateCache {
        static GLOBAL: OnceLock<TemplateCache> = OnceLock::new();
        GLOBAL.get_or_init(|| TemplateCache::new(4096, 64 << 20))
    }

    pub fn new(max_entries: usize, max_bytes: usize) -> TemplateCache {
        TemplateCache {
            entries: RwLock::default(),
            epoch: AtomicU64::new(0),
            max_entries,
            max_bytes,
        }
    }

    /// The parse of `text`, from the cache or parsed now (and cached). `Err` is mustache.js's
    /// message for a malformed template.
    pub fn get_or_parse(&self, text: &str) -> Result<Arc<Template>, String> {
        if let Some(template) = self.get(text) {
            return Ok(template);
        }
        let template = Arc::new(parse(Arc::from(text))?);
        Ok(self.insert(template))
    }

    fn get(&self, text: &str) -> Option<Arc<Template>> {
        let entries = self.entries.read().unwrap_or_else(|e| e.into_inner());
        let entry = entries.map.get(text)?;
        let now = self.epoch.load(Ordering::Relaxed);
        if entry.used.load(Ordering::Relaxed) != now {
            entry.used.store(now, Ordering::Relaxed);
        }
        Some(entry.template.clone())
    }

    /// Caches `template` (unless it alone would take more than a quarter of the budget) and
    /// returns the cached parse of its text.
    fn insert(&self, template: Arc<Template>) -> Arc<Template> {
        let bytes = footprint(&template);
        if bytes > self.max_bytes / 4 {
            return template;
        }
        let mut entries = self.entries.write().unwrap_or_else(|e| e.into_inner());
        if let Some(entry) = entries.map.get(&*template.source) {
            return entry.template.clone();
        }
        while !entries.map.is_empty()
            && (entries.map.len() >= self.max_entries || entries.bytes + bytes > self.max_bytes)
        {
            let oldest = entries
                .map
                .iter()
                .min_by_key(|(_, e)| e.used.load(Ordering::Relaxed))
                .map(|(k, _)| k.clone());
            if let Some(evicted) = oldest.and_then(|k| entries.map.remove(&k)) {
                entries.bytes -= evicted.bytes;
            }
        }
        let used = self.epoch.fetch_add(1, Ordering::Relaxed) + 1;
        entries.bytes += bytes;
        entries.map.insert(
            template.source.clone(),
            Entry {
                template: template.clone(),
                used: AtomicU64::new(used),
                bytes,
            },
        );
        template
    }

    /// How many templates are cached.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.entries
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .map
            .len()
    }
}
