//! The dim expressions of a manifest, evaluated for a launch. They are the
//! IR's own texts: buffer dims and scratch sizes as [`DimExpr`] prints them
//! (`M`, `Dh*H`, `4*N+512`), grid entries as [`GridDim`] writes them (`1`,
//! `S`, `cdiv(S, 64)`). They are read back with the IR's parsers and
//! evaluated with [`DimExpr::eval`] over the dims a call binds.

use tessera_ir::{Attr, DimExpr};
use tessera_ir_graph::GridDim;
use tessera_runtime::RunError;

/// The value of a dim expression (`M`, `Dh*H`, `4*N+512`).
pub fn dim(text: &str, dims: &[(String, i64)]) -> Result<i64, RunError> {
    let d = DimExpr::parse(text).ok_or_else(|| unreadable(text))?;
    value(&d, text, dims)
}

/// The number of blocks of a grid entry (`1`, `S`, `cdiv(S, 64)`); a
/// persistent entry (`persistent(cdiv(M, 128), cdiv(N, 256))`) is as many
/// as `multiprocessors` gives, but no more than its work items.
pub fn grid(
    text: &str,
    dims: &[(String, i64)],
    multiprocessors: impl FnOnce() -> Result<i64, RunError>,
) -> Result<i64, RunError> {
    let entry = GridDim::from_attr(&Attr::str(text)).ok_or_else(|| unreadable(text))?;
    match entry {
        GridDim::Persistent(work) => {
            let mut items = 1i64;
            for w in &work {
                items = items
                    .checked_mul(blocks(w, text, dims)?)
                    .ok_or_else(|| RunError::value(format!("the grid entry `{text}` overflows")))?;
            }
            Ok(items.min(multiprocessors()?))
        }
        other => blocks(&other, text, dims),
    }
}

/// A factor of a cost term (`128`, `2*D*H`, `cdiv(K, 128)`): a grid entry
/// of a form other than persistent.
pub fn factor(text: &str, dims: &[(String, i64)]) -> Result<i64, RunError> {
    grid(text, dims, || Err(unreadable(text)))
}

/// The number of blocks of an entry of a form other than persistent.
fn blocks(entry: &GridDim, text: &str, dims: &[(String, i64)]) -> Result<i64, RunError> {
    match entry {
        GridDim::Const(c) => Ok(*c),
        GridDim::Dim(d) => value(d, text, dims),
        GridDim::CeilDiv(d, tile) => {
            let v = value(d, text, dims)?;
            Ok(v.div_euclid(*tile) + i64::from(v.rem_euclid(*tile) != 0))
        }
        GridDim::Persistent(_) => Err(unreadable(text)),
    }
}

fn unreadable(text: &str) -> RunError {
    RunError::value(format!("cannot read the dim expression `{text}`"))
}

/// The size `dims` binds to the dim `name`.
pub(crate) fn bound(dims: &[(String, i64)], name: &str) -> Option<i64> {
    dims.iter().find(|(n, _)| n == name).map(|(_, v)| *v)
}

fn value(d: &DimExpr, text: &str, dims: &[(String, i64)]) -> Result<i64, RunError> {
    let bound = |name: &str| bound(dims, name);
    if let Some(unbound) = d.symbols().into_iter().find(|s| bound(s).is_none()) {
        return Err(RunError::value(format!(
            "cannot evaluate the dim expression `{text}`: the dim `{unbound}` is not bound"
        )));
    }
    d.eval(bound).ok_or_else(|| {
        RunError::value(format!(
            "cannot evaluate the dim expression `{text}`: the value overflows"
        ))
    })
}

#[cfg(test)]
mod tests {
    use tessera_runtime::RunError;

    use super::{dim, grid};

    /// A device of 132 multiprocessors.
    fn sms() -> Result<i64, RunError> {
        Ok(132)
    }

    fn dims() -> Vec<(String, i64)> {
        vec![("S".into(), 1000), ("M".into(), 256), ("Dh".into(), 64)]
    }

    #[test]
    fn evaluates_what_manifests_contain() {
        let d = dims();
        assert_eq!(grid("cdiv(S, 64)", &d, sms).unwrap(), 16);
        assert_eq!(grid("cdiv(M, 128)", &d, sms).unwrap(), 2);
        assert_eq!(grid("S", &d, sms).unwrap(), 1000);
        assert_eq!(grid("1", &d, sms).unwrap(), 1);
        assert_eq!(dim("4*M*Dh+512", &d).unwrap(), 4 * 256 * 64 + 512);
        assert_eq!(dim("M-2*Dh", &d).unwrap(), 128);
        assert_eq!(dim("Dh*M", &d).unwrap(), 64 * 256);
        assert_eq!(dim("128", &d).unwrap(), 128);
        // 16 × 2 × 64 work items on 132 multiprocessors; 16 × 2 on 132.
        assert_eq!(grid("persistent(cdiv(S, 64), cdiv(M, 128), Dh)", &d, sms).unwrap(), 132);
        assert_eq!(grid("persistent(cdiv(S, 64), cdiv(M, 128), 1)", &d, sms).unwrap(), 32);
    }

    #[test]
    fn a_persistent_grid_needs_the_multiprocessor_count() {
        let d = dims();
        let none = || Err(RunError::launch("no count"));
        assert_eq!(grid("persistent(S)", &d, none).unwrap_err().message, "no count");
        // Other entries never ask.
        assert_eq!(grid("S", &d, none).unwrap(), 1000);
    }

    #[test]
    fn rejects_what_it_cannot_evaluate() {
        let d = dims();
        for bad in [
            "N",
            "cdiv(N, 4)",
            "S $ 2",
            "(S",
            "cdiv(S, 0)",
            "S S",
            "9999999999999999999",
            "M*M*M*M*M*M*M*M",
            "persistent(M*M*M*M, M*M*M*M)",
            "persistent(N)",
        ] {
            let e = dim(bad, &d).and_then(|_| grid(bad, &d, sms)).unwrap_err();
            assert!(e.message.contains(bad), "{bad}: {}", e.message);
        }
    }
}
