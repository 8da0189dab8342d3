//! Filling references in from the closing clauses: the shared `where` parameters, the `by`
//! metric (or the family's default), the `@` machine, and for bare variants and `baseline` the
//! family (and, for `baseline`, the parameters) of the first named reference of the same
//! expression, else of the claim.

use super::parser::{Clauses, RawCond, RawExpr, RawRef};
use super::{Cond, Expr, Ref};

/// Fill every reference in from the clauses and the first reference's family (and, for
/// `baseline`, the first reference's own parameters: the baseline at the same shape).
pub(super) fn resolve(e: RawExpr, c: &Clauses) -> Result<Expr, String> {
    let first = first_ref(&e).ok_or("name the family of the first reference (`family/variant`)")?;
    fill(e, &first, c)
}

/// Fill a claim in. The parts of an `and` share the clauses and the first named family, so a
/// later part may name bare variants of it.
pub(super) fn resolve_cond(cond: RawCond, c: &Clauses) -> Result<Cond, String> {
    let first = raw_first(&cond).ok_or("name the family of the first reference (`family/variant`)")?;
    fill_cond(cond, &first, c)
}

fn raw_first(cond: &RawCond) -> Option<RawRef> {
    match cond {
        RawCond::Trend(_, e) => first_ref(e),
        RawCond::Compare(exprs, _) => exprs.iter().find_map(first_ref),
        RawCond::All(parts) => parts.iter().find_map(raw_first),
    }
}

fn fill_cond(cond: RawCond, first: &RawRef, c: &Clauses) -> Result<Cond, String> {
    // Each expression's bare variants and `baseline` belong to its own first named family
    // (`a / baseline > x/b / baseline` compares each with its own baseline).
    let fill_all = |exprs: Vec<RawExpr>| -> Result<Vec<Expr>, String> {
        exprs.into_iter().map(|e| fill_own(e, first, c)).collect()
    };
    Ok(match cond {
        RawCond::Trend(up, e) => Cond::Trend(up, fill_own(e, first, c)?),
        RawCond::Compare(exprs, cmps) => Cond::Compare(fill_all(exprs)?, cmps),
        RawCond::All(parts) => Cond::All(
            parts
                .into_iter()
                .map(|p| fill_cond(p, first, c))
                .collect::<Result<_, _>>()?,
        ),
    })
}

/// Fill an expression from its own first named reference, else the claim's.
fn fill_own(e: RawExpr, claim_first: &RawRef, c: &Clauses) -> Result<Expr, String> {
    let own = first_ref(&e);
    fill(e, own.as_ref().unwrap_or(claim_first), c)
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
