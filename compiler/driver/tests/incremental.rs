//! Incrementality: after an edit inside one function body, only that
//! function's inference runs again (asserted on salsa's execution events).

use std::sync::{Arc, Mutex};

use tessera_driver::Database;

fn source(functions: usize, edited: Option<usize>) -> String {
    let mut text = String::new();
    for i in 0..functions {
        let constant = if Some(i) == edited { 7 } else { 3 };
        text.push_str(&format!(
            "def f{i}(x: f32[N], y: f32[N]) -> f32[N] where N % 4 == 0:\n    z = x * {constant}.0 + y\n    return z\n\n"
        ));
    }
    text
}

/// A database that records which queries execute, as `name(key)`.
fn logging_database() -> (Database, Arc<Mutex<Vec<String>>>) {
    let log = Arc::new(Mutex::new(Vec::new()));
    let sink = log.clone();
    let db = Database::with_events(Some(Box::new(move |event: salsa::Event| {
        if let salsa::EventKind::WillExecute { database_key } = event.kind {
            sink.lock().unwrap().push(format!("{database_key:?}"));
        }
    })));
    (db, log)
}

#[test]
fn editing_one_body_reruns_only_its_inference() {
    let (mut db, log) = logging_database();
    let file = db.add_file("big.tsr", &source(200, None));
    assert!(db.check(file).is_empty(), "{:?}", db.check(file));
    let first: Vec<String> = std::mem::take(&mut *log.lock().unwrap());
    let inferred = first.iter().filter(|e| e.starts_with("infer(")).count();
    assert_eq!(inferred, 200, "every body is inferred once at first");

    db.set_text(file, &source(200, Some(100)));
    assert!(db.check(file).is_empty());
    let second: Vec<String> = std::mem::take(&mut *log.lock().unwrap());
    let reinferred: Vec<&String> = second.iter().filter(|e| e.starts_with("infer(")).collect();
    let edited = tessera_hir::FnId::new(&db, db.source(file), "f100".to_string());
    let edited_key = format!("infer({:?})", salsa::plumbing::AsId::as_id(&edited));
    assert_eq!(
        reinferred,
        [&edited_key],
        "only the edited body is re-inferred: {second:#?}"
    );
    // The edited function's signature is recomputed (it reads the whole
    // definition) but comes out equal, so no caller is re-checked.
    let signatures: Vec<&String> = second.iter().filter(|e| e.starts_with("signature(")).collect();
    assert!(
        signatures.len() <= 1,
        "only the edited function's signature may run again: {signatures:?}"
    );
}
