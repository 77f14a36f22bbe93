//! Parsed templates, shared by every worker thread of the process.
//!
//! Keyed like mustache.js's cache (`template + ':' + tags`): a template parsed with the default
//! `{{ }}` tags is keyed by its text alone (the common case costs no key building), one parsed
//! with other tags by a key that spells both tags and the text unambiguously, in a map of its
//! own. An indented partial is a different text, hence its own entry, as in mustache.js.
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

use super::parse::{parse, Node, ParseError, Tags, Template};
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
    /// Templates parsed with `{{ }}`, by text.
    map: FxHashMap<Arc<str>, Entry>,
    /// Templates parsed with other tags, by [`custom_key`].
    custom: FxHashMap<Arc<str>, Entry>,
    bytes: usize,
}

impl Entries {
    fn len(&self) -> usize {
        self.map.len() + self.custom.len()
    }

    /// Drops the least recently used entry.
    fn evict_oldest(&mut self) {
        let oldest = |map: &FxHashMap<Arc<str>, Entry>| {
            map.iter()
                .min_by_key(|(_, e)| e.used.load(Ordering::Relaxed))
                .map(|(k, e)| (k.clone(), e.used.load(Ordering::Relaxed)))
        };
        let evicted = match (oldest(&self.map), oldest(&self.custom)) {
            (Some((k, a)), Some((_, b))) if a <= b => self.map.remove(&k),
            (_, Some((k, _))) => self.custom.remove(&k),
            (Some((k, _)), None) => self.map.remove(&k),
            (None, None) => None,
        };
        if let Some(evicted) = evicted {
            self.bytes -= evicted.bytes;
        }
    }
}

/// The key of `text` parsed with `tags`: both tags' lengths first, so no two (tags, text)
/// pairs share a key.
fn custom_key(text: &str, tags: &Tags) -> String {
    format!(
        "{}:{}:{}{}{text}",
        tags.open.len(),
        tags.close.len(),
        tags.open,
        tags.close
    )
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

    /// The parse of `text` starting with `tags` (`None`: `{{ }}`), from the cache or parsed now
    /// (and cached). `Err` is mustache.js's message for a malformed template.
    pub fn get_or_parse(
        &self,
        text: &str,
        tags: Option<&Tags>,
    ) -> Result<Arc<Template>, ParseError> {
        let custom = tags.map(|tags| custom_key(text, tags));
        if let Some(template) = self.get(custom.as_deref().unwrap_or(text), custom.is_some()) {
            return Ok(template);
        }
        let template = Arc::new(parse(Arc::from(text), tags)?);
        Ok(self.insert(template, custom))
    }

    fn get(&self, key: &str, custom: bool) -> Option<Arc<Template>> {
        let entries = self.entries.read().unwrap_or_else(|e| e.into_inner());
        let map = if custom {
            &entries.custom
        } else {
            &entries.map
        };
        let entry = map.get(key)?;
        let now = self.epoch.load(Ordering::Relaxed);
        if entry.used.load(Ordering::Relaxed) != now {
            entry.used.store(now, Ordering::Relaxed);
        }
        Some(entry.template.clone())
    }

    /// Caches `template` under its text, or under `custom` (the key of a parse with other
    /// tags), unless it alone would take more than a quarter of the budget; returns the cached
    /// parse.
    fn insert(&self, template: Arc<Template>, custom: Option<String>) -> Arc<Template> {
        let bytes = footprint(&template) + custom.as_ref().map_or(0, String::len);
        if bytes > self.max_bytes / 4 {
            return template;
        }
        let mut entries = self.entries.write().unwrap_or_else(|e| e.into_inner());
        let known = match &custom {
            Some(key) => entries.custom.get(key.as_str()),
            None => entries.map.get(&*template.source),
        };
        if let Some(entry) = known {
            return entry.template.clone();
        }
        while entries.len() > 0
            && (entries.len() >= self.max_entries || entries.bytes + bytes > self.max_bytes)
        {
            entries.evict_oldest();
        }
        let used = self.epoch.fetch_add(1, Ordering::Relaxed) + 1;
        entries.bytes += bytes;
        let entry = Entry {
            template: template.clone(),
            used: AtomicU64::new(used),
            bytes,
        };
        match custom {
            Some(key) => entries.custom.insert(Arc::from(key), entry),
            None => entries.map.insert(template.source.clone(), entry),
        };
        template
    }

    /// How many templates are cached.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.entries.read().unwrap_or_else(|e| e.into_inner()).len()
    }
}
