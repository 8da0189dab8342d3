//! Filling references in from the closing clauses: the shared `where` parameters, the `by`
//! metric (or the family's default), the `@` machine, the first reference's family for bare
//! variants, and for `baseline` the first reference's own parameters.

use super::parser::{Clauses, RawCond, RawExpr, RawRef};
use super::{Cond, Expr, Ref};

/// Fill every reference in from the clauses and the first reference's family (and, for
/// `baseline`, the first reference's own parameters: the baseline at the same shape).
pub(super) fn resolve(e: RawExpr, c: &Clauses) -> Result<Expr, String> {
    let first = first_ref(&e).ok_or("name the family of the first reference (`family/variant`)")?;
    fill(e, &first, c)
}

pub(super) fn resolve_cond(cond: RawCond, c: &Clauses) -> Result<Cond, String> {
    match cond {
        RawCond::Trend(up, e) => Ok(Cond::Trend(up, resolve(e, c)?)),
        RawCond::Compare(exprs, cmps) => {
            let first = exprs
                .iter()
                .find_map(first_ref)
                .ok_or("name the family of the first reference (`family/variant`)")?;
            let exprs = exprs
                .into_iter()
                .map(|e| fill(e, &first, c))
                .collect::<Result<Vec<_>, _>>()?;
            Ok(Cond::Compare(exprs, cmps))
        }
    }
}

/// The first reference that names its family.
fn first_ref(e: &RawExpr) -> Option<RawRef> {
    match e {
        RawExpr::Num(_) => None,
        RawExpr::Ref(r) => r.family.is_some().then(|| r.clone()),
        RawExpr::Mul(a, b) | RawExpr::Div(a, b) => first_ref(a).or_else(|| first_ref(b)),
    }
}

fn fill(e: RawExpr, first: &RawRef, c: &Clauses) -> Result<Expr, String> {
    Ok(match e {
        RawExpr::Num(v) => Expr::Num(v),
        RawExpr::Mul(a, b) => Expr::Mul(Box::new(fill(*a, first, c)?), Box::new(fill(*b, first, c)?)),
        RawExpr::Div(a, b) => Expr::Div(Box::new(fill(*a, first, c)?), Box::new(fill(*b, first, c)?)),
        RawExpr::Ref(r) => {
            let family = r.family.or_else(|| first.family.clone()).unwrap_or_default();
            let mut params = c.params.clone();
            if r.variant == "baseline" {
                params.extend(first.params.clone());
            }
            params.extend(r.params);
            let metric = r
                .metric
                .or_else(|| c.metric.clone())
                .unwrap_or_else(|| crate::records::Metric::default_for(&family).name().to_string());
            Expr::Ref(Ref {
                family,
                variant: r.variant,
                params,
                metric,
                device: r.device.or_else(|| c.device.clone()),
            })
        }
    })
}
