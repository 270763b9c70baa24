//! Autotuning results on disk, and their use by the build.
//!
//! `tessera tune` measures the configurations an `@autotune(...)` decorator
//! lists and records the fastest in a JSON cache (`tune.json` in
//! `$TESSERA_CACHE_DIR`, else `.tessera/` under the working directory),
//! keyed by (function, source hash of its file, target, the dims it was
//! measured at). A build of that file for that target gives each tuned
//! function its configuration (`autotune.config`) or, when it was tuned
//! at several shapes to different configurations, all of them with their
//! dims (`autotune.configs`), which `fuse` applies to the function's
//! kernels, each for the shapes nearest its dims; without an entry the
//! build uses the target's defaults, so machines without the device (CPU
//! CI, a laptop) build with the cache they were given or with defaults.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use tessera_ir::{Attr, Module};

/// A configuration: knob name → value (`BM = 128`).
pub type Config = BTreeMap<String, i64>;

/// The knobs of an `@autotune` and their candidates, in order.
pub type Space = Vec<(String, Vec<i64>)>;

/// A configuration and the dims it was measured at (none: it is meant for
/// every shape).
#[derive(Clone, Debug, PartialEq)]
pub struct Measured {
    pub dims: BTreeMap<String, i64>,
    pub config: Config,
}

/// `config` for every shape of a function.
pub fn everywhere(config: Config) -> Vec<Measured> {
    vec![Measured {
        dims: BTreeMap::new(),
        config,
    }]
}

/// Function name → the configurations its kernels are built with, in the
/// order they were measured.
pub type Tuning = BTreeMap<String, Vec<Measured>>;

/// One measured best configuration.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Entry {
    pub function: String,
    pub source_hash: String,
    pub target: String,
    /// The dims the configurations were measured at (`M = 4096`).
    pub dims: BTreeMap<String, i64>,
    pub config: Config,
    /// The configuration's median time, in microseconds.
    pub time_us: f64,
    /// The device it was measured on (`cpu`, the GPU's name).
    pub device: String,
    /// When, in seconds since the Unix epoch; the latest entry of a
    /// (function, source, target) is the one builds use.
    pub tuned_at: u64,
}

/// The cache file's contents.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct TuneCache {
    pub entries: Vec<Entry>,
}

impl TuneCache {
    /// The cache's path: `$TESSERA_CACHE_DIR/tune.json`, else
    /// `.tessera/tune.json`.
    pub fn default_path() -> PathBuf {
        let dir = std::env::var_os("TESSERA_CACHE_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from(".tessera"));
        dir.join("tune.json")
    }

    /// Reads the cache; a missing file is an empty cache, an unreadable
    /// one an error that names it.
    pub fn load(path: &Path) -> Result<TuneCache, String> {
        match std::fs::read_to_string(path) {
            Ok(text) => serde_json::from_str(&text)
                .map_err(|e| format!("the tuning cache {} is not valid: {e}", path.display())),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(TuneCache::default()),
            Err(e) => Err(format!("cannot read the tuning cache {}: {e}", path.display())),
        }
    }

    /// Writes the cache (creating its directory), sorted so that the file
    /// is stable.
    pub fn save(&self, path: &Path) -> Result<(), String> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        }
        let text = serde_json::to_string_pretty(self).map_err(|e| e.to_string())?;
        std::fs::write(path, text + "\n").map_err(|e| format!("cannot write {}: {e}", path.display()))
    }

    /// Records `entry`, replacing the one with the same key.
    pub fn insert(&mut self, entry: Entry) {
        self.entries.retain(|e| {
            (&e.function, &e.source_hash, &e.target, &e.dims)
                != (&entry.function, &entry.source_hash, &entry.target, &entry.dims)
        });
        self.entries.push(entry);
        self.entries.sort_by(|a, b| {
            (&a.function, &a.target, &a.source_hash, a.tuned_at).cmp(&(
                &b.function,
                &b.target,
                &b.source_hash,
                b.tuned_at,
            ))
        });
    }

    /// The entries of each function of a file (by its source hash) for
    /// `target`, one per shape it was tuned at, oldest first.
    pub fn tuning(&self, source_hash: &str, target: &str) -> BTreeMap<String, Vec<&Entry>> {
        let mut out: BTreeMap<String, Vec<&Entry>> = BTreeMap::new();
        for e in self
            .entries
            .iter()
            .filter(|e| e.source_hash == source_hash && e.target == target)
        {
            out.entry(e.function.clone()).or_default().push(e);
        }
        for entries in out.values_mut() {
            entries.sort_by_key(|e| e.tuned_at);
        }
        out
    }
}

/// What the cache at [`TuneCache::default_path`] says for a file of
/// source `text` built for `target`: the tuning, and one line per tuned
/// function saying where its configuration comes from. An unreadable cache
/// is an error.
pub fn cached_tuning(text: &str, target: &str) -> Result<(Tuning, Vec<String>), String> {
    let path = TuneCache::default_path();
    let cache = TuneCache::load(&path)?;
    let mut tuning = Tuning::new();
    let mut notes = Vec::new();
    for (function, entries) in cache.tuning(&source_hash(text), target) {
        let measured = |e: &Entry| format!("measured on {} at {}", e.device, describe(&e.dims));
        let note = match entries.as_slice() {
            [e] => format!(
                "`{function}` uses its tuned configuration {} ({}, {})",
                describe(&e.config),
                measured(e),
                path.display()
            ),
            _ => format!(
                "`{function}` uses the configurations it was tuned to at {} shapes ({}), each for the shapes nearest its own: {}",
                entries.len(),
                path.display(),
                entries
                    .iter()
                    .map(|e| format!("{} ({})", describe(&e.config), measured(e)))
                    .collect::<Vec<_>>()
                    .join("; ")
            ),
        };
        notes.push(note);
        let all = entries
            .iter()
            .map(|e| Measured {
                dims: e.dims.clone(),
                config: e.config.clone(),
            })
            .collect();
        tuning.insert(function, all);
    }
    Ok((tuning, notes))
}

/// Gives each `@autotune` function of a Graph-IR module named in `tuning`
/// its configurations, for `fuse`: one (or several that agree) as
/// `autotune.config`, several that differ as `autotune.configs`, each
/// with the dims it was measured at. Functions without the
/// `autotune.space` attribute (no `@autotune`) are left alone.
pub fn apply(module: &mut Module, tuning: &Tuning) {
    let ints = |map: &BTreeMap<String, i64>| Attr::Dict(map.iter().map(|(k, v)| (k.clone(), Attr::Int(*v))).collect());
    for func in module.functions() {
        let Some(name) = module.func_name(func).map(str::to_string) else {
            continue;
        };
        let (Some(all), Some(_)) = (tuning.get(&name), module.attr(func, "autotune.space")) else {
            continue;
        };
        let Some(last) = all.last() else { continue };
        if all.iter().all(|t| t.config == last.config) {
            module.set_attr(func, "autotune.config", ints(&last.config));
            continue;
        }
        let configs = all
            .iter()
            .map(|t| {
                Attr::Dict(BTreeMap::from([
                    ("dims".to_string(), ints(&t.dims)),
                    ("config".to_string(), ints(&t.config)),
                ]))
            })
            .collect();
        module.set_attr(func, "autotune.configs", Attr::Array(configs));
    }
}

/// The search spaces of the `@autotune` functions of a file, by function
/// name, from their signatures.
pub fn search_spaces_of(db: &crate::Database, file: tessera_base::FileId) -> BTreeMap<String, Space> {
    let source = db.source(file);
    tessera_hir::db::item_tree(db, source)
        .functions
        .iter()
        .filter_map(|name| {
            let sig = tessera_hir::db::signature(db, tessera_hir::db::FnId::new(db, source, name.clone()));
            Some((name.clone(), sig.autotune.as_ref()?.0.clone()))
        })
        .collect()
}

/// The dim symbols of function `name`'s parameters in `file`: the dims a
/// tuning's `--dim`s may give.
pub fn dim_symbols_of(db: &crate::Database, file: tessera_base::FileId, name: &str) -> Vec<String> {
    let source = db.source(file);
    tessera_hir::db::signature(db, tessera_hir::db::FnId::new(db, source, name.to_string())).dim_symbols()
}

/// Every configuration of a search space (its Cartesian product), in
/// order: the last knob varies fastest.
pub fn configurations(space: &[(String, Vec<i64>)]) -> Vec<Config> {
    let mut out = vec![Config::new()];
    for (knob, values) in space {
        out = out
            .into_iter()
            .flat_map(|c| {
                values.iter().map(move |&v| {
                    let mut next = c.clone();
                    next.insert(knob.clone(), v);
                    next
                })
            })
            .collect();
    }
    out
}

/// A configuration as text: `BM=128 BN=64 stages=3`.
pub fn describe(config: &Config) -> String {
    config
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// A stable FNV-1a hash of a source text (the manifest's `source_hash`
/// and the tuning cache's key).
pub fn source_hash(text: &str) -> String {
    format!("fnv1a64:{:016x}", tessera_base::fnv1a64(text.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(function: &str, m: i64, bm: i64, at: u64) -> Entry {
        Entry {
            function: function.into(),
            source_hash: "h".into(),
            target: "cpu".into(),
            dims: BTreeMap::from([("M".into(), m)]),
            config: Config::from([("BM".into(), bm)]),
            time_us: 1.0,
            device: "cpu".into(),
            tuned_at: at,
        }
    }

    #[test]
    fn configurations_are_the_cartesian_product() {
        let space = vec![("BM".to_string(), vec![64, 128]), ("stages".to_string(), vec![2, 3, 4])];
        let all = configurations(&space);
        assert_eq!(all.len(), 6);
        assert_eq!(describe(&all[0]), "BM=64 stages=2");
        assert_eq!(describe(&all[5]), "BM=128 stages=4");
    }

    #[test]
    fn each_shape_keeps_its_entry_and_keys_replace() {
        let mut cache = TuneCache::default();
        cache.insert(entry("f", 256, 64, 1));
        cache.insert(entry("f", 512, 128, 2));
        cache.insert(entry("f", 256, 32, 3));
        assert_eq!(cache.entries.len(), 2, "the same dims replace their entry");
        let tuning = cache.tuning("h", "cpu");
        let seen: Vec<(i64, i64)> = tuning["f"].iter().map(|e| (e.dims["M"], e.config["BM"])).collect();
        assert_eq!(seen, [(512, 128), (256, 32)], "oldest first");
        assert!(cache.tuning("h", "sm_80").is_empty());
        assert!(cache.tuning("other", "cpu").is_empty());
    }

    #[test]
    fn configurations_that_differ_are_applied_with_their_dims() {
        let text = r#"module {
  func.func @f(%a: tensor<Mxf32>) -> (tensor<Mxf32>) attributes {autotune.space = {BM = [32, 64]}, effects = [], numerics = "none"} {
    graph.return(%a) : (tensor<Mxf32>) -> ()
  }
  func.func @g(%a: tensor<Mxf32>) -> (tensor<Mxf32>) attributes {effects = [], numerics = "none"} {
    graph.return(%a) : (tensor<Mxf32>) -> ()
  }
}"#;
        let at = |m: i64, bm: i64| Measured {
            dims: BTreeMap::from([("M".into(), m)]),
            config: Config::from([("BM".into(), bm)]),
        };
        let applied = |all: Vec<Measured>| {
            let mut module = tessera_ir::parse(text).unwrap();
            let tuning = Tuning::from([("f".to_string(), all.clone()), ("g".to_string(), all)]);
            apply(&mut module, &tuning);
            tessera_ir::print_module(&module)
        };
        let agreeing = applied(vec![at(16, 32), at(4096, 32)]);
        assert!(agreeing.contains("autotune.config = {BM = 32}"), "{agreeing}");
        let differing = applied(vec![at(16, 32), at(4096, 64)]);
        assert!(
            differing.contains(
                "autotune.configs = [{config = {BM = 32}, dims = {M = 16}}, {config = {BM = 64}, dims = {M = 4096}}]"
            ),
            "{differing}"
        );
        assert_eq!(
            differing.matches("autotune.config").count(),
            1,
            "no @autotune, no tuning: {differing}"
        );
    }

    #[test]
    fn the_cache_round_trips_through_its_file() {
        let dir = std::env::temp_dir().join(format!("tessera-tune-{}", std::process::id()));
        let path = dir.join("tune.json");
        assert!(TuneCache::load(&path).unwrap().entries.is_empty());
        let mut cache = TuneCache::default();
        cache.insert(entry("f", 256, 64, 1));
        cache.save(&path).unwrap();
        assert_eq!(TuneCache::load(&path).unwrap().entries, cache.entries);
        std::fs::write(&path, "{").unwrap();
        assert!(TuneCache::load(&path).unwrap_err().contains("not valid"));
        let _ = std::fs::remove_dir_all(dir);
    }
}
