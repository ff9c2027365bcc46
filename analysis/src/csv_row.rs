//! CSV tables whose rows are `#[derive(Serialize)]` structs: the columns are the struct's
//! fields, in declaration order, so a column's name and its value are written in one
//! place.
//!
//! A row is flat: every field is text, an integer, a bool, an option of one (`None` is an
//! empty field), a unit enum variant (its serde name) or a newtype around one. A
//! floating-point field is refused: numbers are formatted by the writer
//! ([`fmt4`](crate::format::fmt4), [`format_p`](crate::format::format_p)) and stored in the
//! row as text, so the table keeps the bytes it always had. Every field is quoted as
//! needed ([`csv_field`](crate::format::csv_field)), through
//! [`CsvTable`](crate::format::CsvTable).
//!
//! The header comes from the row type's `Default` value, so a table with no rows still has
//! its header line.

use crate::format::CsvTable;
use serde::ser::{self, Impossible, Serialize};
use std::fmt;

/// `rows` as a CSV table: the header (`R`'s field names), then one line per row.
pub(crate) fn csv_table<R: Serialize + Default>(rows: impl IntoIterator<Item = R>) -> String {
    let (columns, _) = fields(&R::default());
    let mut table = CsvTable::new(&columns);
    for row in rows {
        table.row(&fields(&row).1);
    }
    table.finish()
}

/// A row's field names and its fields as text. Panics on a row that is not flat (a bug in
/// its type, caught by its table's tests).
fn fields<R: Serialize>(row: &R) -> (Vec<&'static str>, Vec<String>) {
    row.serialize(RowSerializer)
        .unwrap_or_else(|e| panic!("a CSV row must be a flat struct: {e}"))
}

/// Why a row could not be written as CSV.
#[derive(Debug)]
struct NotFlat(String);

impl fmt::Display for NotFlat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for NotFlat {}

impl ser::Error for NotFlat {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        NotFlat(msg.to_string())
    }
}

fn not_flat<T>(what: &str) -> Result<T, NotFlat> {
    Err(NotFlat(format!("{what} is not a CSV field")))
}

/// Serializes a struct into its field names and fields.
struct RowSerializer;

/// The fields serialized so far.
struct Row {
    names: Vec<&'static str>,
    cells: Vec<String>,
}

impl ser::SerializeStruct for Row {
    type Ok = (Vec<&'static str>, Vec<String>);
    type Error = NotFlat;

    fn serialize_field<T: ?Sized + Serialize>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<(), NotFlat> {
        self.names.push(key);
        self.cells.push(
            value
                .serialize(CellSerializer)
                .map_err(|e| NotFlat(format!("field `{key}`: {e}")))?,
        );
        Ok(())
    }

    fn end(self) -> Result<Self::Ok, NotFlat> {
        Ok((self.names, self.cells))
    }
}

macro_rules! refuse {
    ($($method:ident($($arg:ty),*) $what:literal;)*) => {
        $(
            fn $method(self $(, _: $arg)*) -> Result<Self::Ok, NotFlat> {
                not_flat($what)
            }
        )*
    };
}

impl ser::Serializer for RowSerializer {
    type Ok = (Vec<&'static str>, Vec<String>);
    type Error = NotFlat;
    type SerializeSeq = Impossible<Self::Ok, NotFlat>;
    type SerializeTuple = Impossible<Self::Ok, NotFlat>;
    type SerializeTupleStruct = Impossible<Self::Ok, NotFlat>;
    type SerializeTupleVariant = Impossible<Self::Ok, NotFlat>;
    type SerializeMap = Impossible<Self::Ok, NotFlat>;
    type SerializeStruct = Row;
    type SerializeStructVariant = Impossible<Self::Ok, NotFlat>;

    fn serialize_struct(self, _: &'static str, len: usize) -> Result<Row, NotFlat> {
        Ok(Row {
            names: Vec::with_capacity(len),
            cells: Vec::with_capacity(len),
        })
    }

    refuse! {
        serialize_bool(bool) "a bool row";
        serialize_i8(i8) "an integer row";
        serialize_i16(i16) "an integer row";
        serialize_i32(i32) "an integer row";
        serialize_i64(i64) "an integer row";
        serialize_u8(u8) "an integer row";
        serialize_u16(u16) "an integer row";
        serialize_u32(u32) "an integer row";
        serialize_u64(u64) "an integer row";
        serialize_f32(f32) "a number row";
        serialize_f64(f64) "a number row";
        serialize_char(char) "a char row";
        serialize_str(&str) "a text row";
        serialize_bytes(&[u8]) "a bytes row";
        serialize_none() "an empty row";
        serialize_unit() "a unit row";
        serialize_unit_struct(&'static str) "a unit row";
        serialize_unit_variant(&'static str, u32, &'static str) "an enum row";
    }

    fn serialize_some<T: ?Sized + Serialize>(self, _: &T) -> Result<Self::Ok, NotFlat> {
        not_flat("an optional row")
    }
    fn serialize_newtype_struct<T: ?Sized + Serialize>(
        self,
        _: &'static str,
        _: &T,
    ) -> Result<Self::Ok, NotFlat> {
        not_flat("a newtype row")
    }
    fn serialize_newtype_variant<T: ?Sized + Serialize>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: &T,
    ) -> Result<Self::Ok, NotFlat> {
        not_flat("an enum row")
    }
    fn serialize_seq(self, _: Option<usize>) -> Result<Self::SerializeSeq, NotFlat> {
        not_flat("a sequence row")
    }
    fn serialize_tuple(self, _: usize) -> Result<Self::SerializeTuple, NotFlat> {
        not_flat("a tuple row")
    }
    fn serialize_tuple_struct(
        self,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleStruct, NotFlat> {
        not_flat("a tuple row")
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleVariant, NotFlat> {
        not_flat("an enum row")
    }
    fn serialize_map(self, _: Option<usize>) -> Result<Self::SerializeMap, NotFlat> {
        not_flat("a map row (a flattened field)")
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStructVariant, NotFlat> {
        not_flat("an enum row")
    }
}

/// Serializes one field as its text (unquoted: the table quotes).
struct CellSerializer;

macro_rules! display {
    ($($method:ident($ty:ty);)*) => {
        $(
            fn $method(self, v: $ty) -> Result<String, NotFlat> {
                Ok(v.to_string())
            }
        )*
    };
}

impl ser::Serializer for CellSerializer {
    type Ok = String;
    type Error = NotFlat;
    type SerializeSeq = Impossible<String, NotFlat>;
    type SerializeTuple = Impossible<String, NotFlat>;
    type SerializeTupleStruct = Impossible<String, NotFlat>;
    type SerializeTupleVariant = Impossible<String, NotFlat>;
    type SerializeMap = Impossible<String, NotFlat>;
    type SerializeStruct = Impossible<String, NotFlat>;
    type SerializeStructVariant = Impossible<String, NotFlat>;

    display! {
        serialize_bool(bool);
        serialize_i8(i8);
        serialize_i16(i16);
        serialize_i32(i32);
        serialize_i64(i64);
        serialize_u8(u8);
        serialize_u16(u16);
        serialize_u32(u32);
        serialize_u64(u64);
        serialize_char(char);
        serialize_str(&str);
    }

    fn serialize_f32(self, _: f32) -> Result<String, NotFlat> {
        not_flat("a float (format it as text: fmt4, format_p)")
    }
    fn serialize_f64(self, _: f64) -> Result<String, NotFlat> {
        not_flat("a float (format it as text: fmt4, format_p)")
    }
    fn serialize_bytes(self, _: &[u8]) -> Result<String, NotFlat> {
        not_flat("bytes")
    }
    fn serialize_none(self) -> Result<String, NotFlat> {
        Ok(String::new())
    }
    fn serialize_some<T: ?Sized + Serialize>(self, v: &T) -> Result<String, NotFlat> {
        v.serialize(self)
    }
    fn serialize_unit(self) -> Result<String, NotFlat> {
        Ok(String::new())
    }
    fn serialize_unit_struct(self, _: &'static str) -> Result<String, NotFlat> {
        Ok(String::new())
    }
    fn serialize_unit_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
    ) -> Result<String, NotFlat> {
        Ok(variant.to_string())
    }
    fn serialize_newtype_struct<T: ?Sized + Serialize>(
        self,
        _: &'static str,
        v: &T,
    ) -> Result<String, NotFlat> {
        v.serialize(self)
    }
    fn serialize_newtype_variant<T: ?Sized + Serialize>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: &T,
    ) -> Result<String, NotFlat> {
        not_flat("an enum with data")
    }
    fn serialize_seq(self, _: Option<usize>) -> Result<Self::SerializeSeq, NotFlat> {
        not_flat("a sequence")
    }
    fn serialize_tuple(self, _: usize) -> Result<Self::SerializeTuple, NotFlat> {
        not_flat("a tuple")
    }
    fn serialize_tuple_struct(
        self,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleStruct, NotFlat> {
        not_flat("a tuple")
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleVariant, NotFlat> {
        not_flat("an enum with data")
    }
    fn serialize_map(self, _: Option<usize>) -> Result<Self::SerializeMap, NotFlat> {
        not_flat("a map")
    }
    fn serialize_struct(self, _: &'static str, _: usize) -> Result<Self::SerializeStruct, NotFlat> {
        not_flat("a struct")
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStructVariant, NotFlat> {
        not_flat("an enum with data")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Serialize;

    #[derive(Serialize, Default)]
    struct Line<'a> {
        name: &'a str,
        count: u64,
        share: String,
        note: Option<&'a str>,
        ok: bool,
    }

    #[test]
    fn columns_are_the_fields_and_fields_are_quoted_as_needed() {
        let rows = [
            Line {
                name: "a,b",
                count: 3,
                share: "0.5000".into(),
                note: None,
                ok: true,
            },
            Line {
                name: "say \"hi\"",
                count: 0,
                share: String::new(),
                note: Some("x"),
                ok: false,
            },
        ];
        assert_eq!(
            csv_table(rows),
            "name,count,share,note,ok\n\"a,b\",3,0.5000,,true\n\"say \"\"hi\"\"\",0,,x,false\n"
        );
        assert_eq!(
            csv_table(Vec::<Line<'_>>::new()),
            "name,count,share,note,ok\n"
        );
    }

    #[test]
    #[should_panic(expected = "field `x`: a float")]
    fn a_float_field_is_refused() {
        #[derive(Serialize, Default)]
        struct Bad {
            x: f64,
        }
        csv_table([Bad { x: 0.5 }]);
    }
}
