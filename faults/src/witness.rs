//! Witnesses: evidence that a fault actually changed something.
//!
//! [`Witness`] is what every fault stores; the fields a reader relies on are typed structs
//! here ([`UnscaledClickWitness`]), written by the fault's hook and read back by the
//! analysis, so both sides agree on the field names by construction.

use faultline_tasks::Point;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The fields of an `execute.unscaled_coordinates` witness (the report's click overlay
/// reads them): the point in the screenshot the model asked for, the viewport point it
/// should have become, and the point actually dispatched (the image point, unscaled).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct UnscaledClickWitness {
    /// In screenshot (image) pixels.
    pub image_point: Point,
    /// In viewport pixels: the image point scaled as an honest tool would.
    pub intended: Point,
    /// In viewport pixels: what was dispatched.
    pub executed: Point,
}

/// Evidence that a fault fired, stored with the trial as JSON:
/// `{"fault": "<id>", "summary": "<one line>", ...fields}`.
///
/// The fields are the fault's own (the corrupted text, the unscaled point, the status code
/// served, the page-clock instants). A fault that changed nothing returns no witness, and
/// its trial is stored as not fired.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Witness {
    /// The id of the fault that fired.
    pub fault: String,
    /// One line for tables, logs and the report.
    pub summary: String,
    #[serde(flatten)]
    /// The fault's own fields, flattened into the JSON object.
    pub data: Map<String, Value>,
}

impl Witness {
    /// A witness for `fault` with `data`, which must be a JSON object (anything else is
    /// stored under `value`).
    pub fn new(fault: &str, summary: impl Into<String>, data: Value) -> Witness {
        let data = match data {
            Value::Object(m) => m,
            Value::Null => Map::new(),
            other => {
                let mut m = Map::new();
                m.insert("value".into(), other);
                m
            }
        };
        Witness {
            fault: fault.to_string(),
            summary: summary.into(),
            data,
        }
    }

    /// A field of the witness.
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.data.get(key)
    }

    /// A string field.
    pub fn str(&self, key: &str) -> Option<&str> {
        self.data.get(key).and_then(Value::as_str)
    }

    /// The witness's fields as a typed struct (e.g. [`UnscaledClickWitness`]).
    pub fn fields<T: for<'de> Deserialize<'de>>(&self) -> Option<T> {
        serde_json::from_value(Value::Object(self.data.clone())).ok()
    }

    /// A number field.
    pub fn f64(&self, key: &str) -> Option<f64> {
        self.data.get(key).and_then(Value::as_f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn fields_are_flattened_next_to_the_fault_id() {
        let w = Witness::new("x.y", "did it", json!({"status": 500}));
        let text = serde_json::to_string(&w).unwrap();
        assert_eq!(text, r#"{"fault":"x.y","summary":"did it","status":500}"#);
        let back: Witness = serde_json::from_str(&text).unwrap();
        assert_eq!(back, w);
        assert_eq!(back.f64("status"), Some(500.0));
        assert_eq!(
            Witness::new("a.b", "s", json!(3)).get("value"),
            Some(&json!(3))
        );
    }

    #[test]
    fn typed_fields_serialise_as_the_hook_always_wrote_them() {
        let (image_point, intended) = (Point::new(100.0, 50.5), Point::new(133.0, 67.0));
        let fields = UnscaledClickWitness {
            image_point,
            intended,
            executed: image_point,
        };
        let typed = Witness::new("f", "s", serde_json::to_value(fields).unwrap());
        let literal = Witness::new(
            "f",
            "s",
            json!({ "image_point": image_point, "intended": intended, "executed": image_point }),
        );
        assert_eq!(
            serde_json::to_string(&typed).unwrap(),
            serde_json::to_string(&literal).unwrap()
        );
        assert_eq!(typed.fields::<UnscaledClickWitness>(), Some(fields));
    }
}
