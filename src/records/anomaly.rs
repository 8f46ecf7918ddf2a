//! An anomaly, `{kind, detail}`: the objects of a record's `anomalies`.

use super::{Closed, Described, Key, Ty, Value};
use crate::dissect::Anomaly;

type K = Key<Anomaly>;

/// An object of `anomalies`.
impl Described for Anomaly {
    type Of<'a> = Anomaly;
    const KEYS: &'static [K] = &[
        K::new(
            "kind",
            Ty::Str,
            "Each anomaly's kind (gap, resend, duplicate, ...).",
            |a, f| f(Value::Str(a.kind)),
        )
        .closed(Closed::AnomalyKind),
        K::new("detail", Ty::Str, "Each anomaly's detail text.", |a, f| {
            f(Value::Str(&a.detail))
        }),
    ];
}
