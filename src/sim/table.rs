//! A small typed column table: what the harness computes, what it stores as parquet (the
//! `parquet` crate's low-level reader and writer; files polars wrote before read the same), and
//! what reports read back. Non-finite numbers are stored as nulls, so no NaN ever reaches a
//! result file or a printed table.

use crate::error::{Error, Result};
use parquet::basic::{
    Compression, ConvertedType, IntType, LogicalType, Repetition, Type as PhysicalType, ZstdLevel,
};
use parquet::column::reader::{ColumnReader, ColumnReaderImpl};
use parquet::data_type::{BoolType, ByteArray, ByteArrayType, DataType, DoubleType, Int64Type};
use parquet::errors::ParquetError;
use parquet::file::properties::WriterProperties;
use parquet::file::reader::{FileReader, SerializedFileReader};
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::types::{ColumnPath, Type as SchemaType};
use std::path::Path;
use std::sync::Arc;

/// What a parquet file may hold uncompressed, as its metadata states it: tables are read whole,
/// so a small file that expands to more than this is refused before it is decompressed.
const MAX_UNCOMPRESSED_BYTES: i64 = 4 << 30;

/// Refuses a table too large to read whole, and a codec this build lacks (the parquet crate's
/// own words are "Disabled feature at compile time"), naming it and what to do.
fn check_size_and_codecs(
    path: &Path,
    meta: &parquet::file::metadata::ParquetMetaData,
) -> Result<()> {
    let groups = meta.row_groups();
    let size: i64 = groups.iter().map(|g| g.total_byte_size().max(0)).sum();
    if size > MAX_UNCOMPRESSED_BYTES {
        return Err(Error::results(
            path,
            format!(
                "holds {size} bytes uncompressed, more than the {MAX_UNCOMPRESSED_BYTES} dptune \
                 reads into memory: not a table of dptune's"
            ),
        ));
    }
    for column in groups.iter().flat_map(|g| g.columns()) {
        let codec = column.compression();
        if !matches!(
            codec,
            Compression::UNCOMPRESSED | Compression::SNAPPY | Compression::ZSTD(_)
        ) {
            // `GZIP(GzipLevel(6))` is gzip.
            let name = codec.to_string();
            let name = name.split('(').next().unwrap_or_default().to_lowercase();
            return Err(Error::results(
                path,
                format!(
                    "column `{}` is compressed with {name}, which dptune does not read (it \
                     reads zstd, snappy and uncompressed parquet): write it again with zstd or \
                     snappy (pandas: `df.to_parquet(path, compression=\"zstd\")`)",
                    column.column_descr().name()
                ),
            ));
        }
    }
    Ok(())
}

/// One typed column.
#[derive(Clone, Debug, PartialEq)]
pub enum Values {
    Str(Vec<String>),
    U64(Vec<u64>),
    /// Nullable floats (None = not applicable, or not finite).
    F64(Vec<Option<f64>>),
    Bool(Vec<bool>),
}

impl Values {
    fn len(&self) -> usize {
        match self {
            Values::Str(v) => v.len(),
            Values::U64(v) => v.len(),
            Values::F64(v) => v.len(),
            Values::Bool(v) => v.len(),
        }
    }

    fn extend(&mut self, other: &Values) -> bool {
        match (self, other) {
            (Values::Str(a), Values::Str(b)) => a.extend_from_slice(b),
            (Values::U64(a), Values::U64(b)) => a.extend_from_slice(b),
            (Values::F64(a), Values::F64(b)) => a.extend_from_slice(b),
            (Values::Bool(a), Values::Bool(b)) => a.extend_from_slice(b),
            _ => return false,
        }
        true
    }
}

/// Whether column `name` holds wall-clock times (they differ between runs): `wall_ms`, and
/// every `…_wall_ms`, `…_wall_s` and `…_wall_share` (a share of wall-clock time).
pub fn is_timing(name: &str) -> bool {
    name == "wall_ms"
        || ["_wall_ms", "_wall_s", "_wall_share"]
            .iter()
            .any(|e| name.ends_with(e))
}

/// Named columns of equal length, in order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Table {
    pub columns: Vec<(String, Values)>,
}

/// A float cell: finite values only.
pub fn finite(x: f64) -> Option<f64> {
    x.is_finite().then_some(x)
}

/// The field names of one serialised row, in field order (serde_json's maps sort their keys;
/// the text keeps the order).
struct FieldOrder(Vec<String>);

impl<'de> serde::Deserialize<'de> for FieldOrder {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = FieldOrder;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a row (a struct of cells)")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> std::result::Result<FieldOrder, A::Error> {
                let mut names = Vec::new();
                while let Some((name, _)) = map.next_entry::<String, serde::de::IgnoredAny>()? {
                    names.push(name);
                }
                Ok(FieldOrder(names))
            }
        }
        d.deserialize_map(Visit)
    }
}

impl Table {
    /// The table of `rows`, a `#[derive(Serialize)]` struct per row: one column per field, in
    /// field order; strings, unsigned integers (`u64`, `usize`), booleans, and floats (`f64`
    /// or `Option<f64>`; `None` and non-finite values are nulls). Every row has the same
    /// fields; an empty slice is the empty table.
    pub fn from_rows<T: serde::Serialize>(rows: &[T]) -> Result<Table> {
        use serde_json::Value;
        let mut table = Table::default();
        for (r, row) in rows.iter().enumerate() {
            let fail = |e: serde_json::Error| Error::Numerical(format!("row {r}: {e}"));
            // The values exactly (no text round trip), the order from the text.
            let Value::Object(mut values) = serde_json::to_value(row).map_err(fail)? else {
                return Err(Error::Numerical(format!("row {r} is not a struct")));
            };
            let text = serde_json::to_string(row).map_err(fail)?;
            let order: FieldOrder = serde_json::from_str(&text).map_err(fail)?;
            let cells: Vec<(String, Value)> = order
                .0
                .into_iter()
                .map(|name| {
                    let cell = values.remove(&name).unwrap_or(Value::Null);
                    (name, cell)
                })
                .collect();
            if r > 0 && cells.len() != table.columns.len() {
                return Err(Error::Numerical(format!(
                    "row {r} has {} cells, the first {}",
                    cells.len(),
                    table.columns.len()
                )));
            }
            for (c, (name, cell)) in cells.into_iter().enumerate() {
                let value = match cell {
                    Value::String(s) => Values::Str(vec![s]),
                    Value::Bool(b) => Values::Bool(vec![b]),
                    Value::Number(n) if n.is_u64() => Values::U64(vec![n.as_u64().unwrap_or(0)]),
                    Value::Number(n) if n.is_f64() => Values::F64(vec![n.as_f64().and_then(finite)]),
                    Value::Null => Values::F64(vec![None]),
                    other => {
                        return Err(Error::Numerical(format!(
                            "column `{name}`: {other} is not a cell (string, unsigned integer, number or boolean)"
                        )))
                    }
                };
                if r == 0 {
                    table.columns.push((name, value));
                } else if table.columns[c].0 != name || !table.columns[c].1.extend(&value) {
                    return Err(Error::Numerical(format!(
                        "row {r}: column `{name}` does not match the first row's `{}`",
                        table.columns[c].0
                    )));
                }
            }
        }
        Ok(table)
    }

    /// [`Table::from_rows`] with the experiment's name in front: the first column of every
    /// study's table.
    pub fn from_experiment_rows<T: serde::Serialize>(
        experiment: &str,
        rows: &[T],
    ) -> Result<Table> {
        #[derive(serde::Serialize)]
        struct Tagged<'a, T> {
            experiment: &'a str,
            #[serde(flatten)]
            row: &'a T,
        }
        let tagged: Vec<Tagged<T>> = rows.iter().map(|row| Tagged { experiment, row }).collect();
        Table::from_rows(&tagged)
    }

    /// The rows as `#[derive(Deserialize)]` structs, by column name (the inverse of
    /// [`Table::from_rows`]; columns the struct does not name are passed over). A null
    /// meets only an `Option`; an error names the row and the column.
    pub fn rows<T: serde::de::DeserializeOwned>(&self) -> Result<Vec<T>> {
        use serde_json::Value;
        (0..self.height())
            .map(|i| {
                let row: serde_json::Map<String, Value> = self
                    .columns
                    .iter()
                    .map(|(name, values)| {
                        let cell = match values {
                            Values::Str(v) => Value::from(v[i].as_str()),
                            Values::U64(v) => Value::from(v[i]),
                            Values::F64(v) => v[i].map_or(Value::Null, Value::from),
                            Values::Bool(v) => Value::from(v[i]),
                        };
                        (name.clone(), cell)
                    })
                    .collect();
                serde_path_to_error::deserialize(Value::Object(row))
                    .map_err(|e| Error::Numerical(format!("row {i}: {}: {}", e.path(), e.inner())))
            })
            .collect()
    }

    /// Adds a column (builder style).
    pub fn with(mut self, name: &str, values: Values) -> Self {
        self.columns.push((name.to_string(), values));
        self
    }

    pub fn height(&self) -> usize {
        self.columns.first().map_or(0, |(_, v)| v.len())
    }

    pub fn names(&self) -> Vec<&str> {
        self.columns.iter().map(|(n, _)| n.as_str()).collect()
    }

    fn column(&self, name: &str) -> Result<&Values> {
        self.columns
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v)
            .ok_or_else(|| Error::Infeasible(format!("result table has no column `{name}`")))
    }

    pub fn str(&self, name: &str) -> Result<&[String]> {
        match self.column(name)? {
            Values::Str(v) => Ok(v),
            _ => Err(Error::Infeasible(format!("column `{name}` is not text"))),
        }
    }

    pub fn f64(&self, name: &str) -> Result<&[Option<f64>]> {
        match self.column(name)? {
            Values::F64(v) => Ok(v),
            _ => Err(Error::Infeasible(format!("column `{name}` is not a float"))),
        }
    }

    /// A float column that older tables may lack (None when absent).
    pub fn f64_if_any(&self, name: &str) -> Result<Option<&[Option<f64>]>> {
        match self.names().contains(&name) {
            true => self.f64(name).map(Some),
            false => Ok(None),
        }
    }

    pub fn u64(&self, name: &str) -> Result<&[u64]> {
        match self.column(name)? {
            Values::U64(v) => Ok(v),
            _ => Err(Error::Infeasible(format!(
                "column `{name}` is not an integer"
            ))),
        }
    }

    pub fn bool(&self, name: &str) -> Result<&[bool]> {
        match self.column(name)? {
            Values::Bool(v) => Ok(v),
            _ => Err(Error::Infeasible(format!(
                "column `{name}` is not a boolean"
            ))),
        }
    }

    /// Appends the rows of `other` (same columns in the same order).
    pub fn append(&mut self, other: &Table) -> Result<()> {
        if self.columns.is_empty() {
            *self = other.clone();
            return Ok(());
        }
        if self.names() != other.names() {
            return Err(Error::Infeasible(format!(
                "cannot append tables with different columns ({:?} vs {:?})",
                self.names(),
                other.names()
            )));
        }
        for ((name, a), (_, b)) in self.columns.iter_mut().zip(&other.columns) {
            if !a.extend(b) {
                return Err(Error::Infeasible(format!("column `{name}` changed type")));
            }
        }
        Ok(())
    }

    /// The table without its timing columns ([`is_timing`]): what must be
    /// identical between two runs of one configuration.
    pub fn without_timing(&self) -> Table {
        Table {
            columns: self
                .columns
                .iter()
                .filter(|(n, _)| !is_timing(n))
                .cloned()
                .collect(),
        }
    }

    /// The table without column `name` (e.g. wall time, before comparing two runs).
    pub fn without(&self, name: &str) -> Table {
        Table {
            columns: self
                .columns
                .iter()
                .filter(|(n, _)| n != name)
                .cloned()
                .collect(),
        }
    }

    /// Writes parquet atomically: a hidden temporary file in the same directory, then a rename,
    /// so a reader (or a resumed run) never sees a half-written file.
    pub fn write_parquet(&self, path: &Path) -> Result<()> {
        let bytes = self.parquet_bytes(path)?;
        write_bytes(path, &bytes)
    }

    /// Whether `other` has the same columns, in order, with the same values bit for bit (floats
    /// by their bits: `-0.0` is not `0.0`; nulls as nulls).
    pub fn identical(&self, other: &Table) -> bool {
        self.columns.len() == other.columns.len()
            && self
                .columns
                .iter()
                .zip(&other.columns)
                .all(|((m, a), (n, b))| {
                    m == n
                        && match (a, b) {
                            (Values::F64(a), Values::F64(b)) => {
                                a.len() == b.len()
                                    && a.iter()
                                        .zip(b)
                                        .all(|(x, y)| x.map(f64::to_bits) == y.map(f64::to_bits))
                            }
                            _ => a == b,
                        }
                })
    }

    /// [`Table::write_parquet`], unless `path` is a file that already reads back as this very
    /// table ([`Table::identical`]): that file is left as it is (its bytes may be another
    /// parquet writer's, as the results polars wrote are). Returns whether it wrote.
    pub fn write_parquet_if_changed(&self, path: &Path) -> Result<bool> {
        let same = path.symlink_metadata().is_ok_and(|m| m.is_file())
            && Table::read_parquet(path).is_ok_and(|old| old.identical(self));
        if !same {
            self.write_parquet(path)?;
        }
        Ok(!same)
    }

    /// The parquet encoding of the table (`path` names it in errors): one optional column per
    /// column, as polars wrote them (strings as UTF-8 byte arrays, `u64` as unsigned 64-bit
    /// integers, floats as doubles with nulls, booleans), zstd-compressed, in row groups of
    /// `ROW_GROUP` rows (none for a table without rows: the schema alone keeps the types).
    pub fn parquet_bytes(&self, path: &Path) -> Result<Vec<u8>> {
        let level = ZstdLevel::try_new(ZSTD_LEVEL).map_err(|e| Error::io(path, e))?;
        // Dictionaries for the text columns only: the numbers are mostly distinct, and a
        // dictionary that overflows into plain pages made `kusner-suite` 19% larger.
        let mut properties = WriterProperties::builder()
            .set_compression(Compression::ZSTD(level))
            .set_dictionary_enabled(false);
        for (name, v) in &self.columns {
            if matches!(v, Values::Str(_)) {
                properties =
                    properties.set_column_dictionary_enabled(ColumnPath::from(name.as_str()), true);
            }
        }
        self.encode(path, properties.build())
    }

    /// The parquet encoding of the table under `properties`.
    fn encode(&self, path: &Path, properties: WriterProperties) -> Result<Vec<u8>> {
        let height = self.height();
        for (i, (name, v)) in self.columns.iter().enumerate() {
            if v.len() != height {
                return Err(Error::Infeasible(format!(
                    "column `{name}` has a ragged length"
                )));
            }
            if self.columns[..i].iter().any(|(n, _)| n == name) {
                return Err(Error::Infeasible(format!("column `{name}` appears twice")));
            }
        }
        let bad = |e: ParquetError| Error::io(path, e);
        let fields = self
            .columns
            .iter()
            .map(|(name, v)| {
                let (physical, logical) = match v {
                    Values::Str(_) => (PhysicalType::BYTE_ARRAY, Some(LogicalType::String)),
                    Values::U64(_) => (PhysicalType::INT64, Some(LogicalType::integer(64, false))),
                    Values::F64(_) => (PhysicalType::DOUBLE, None),
                    Values::Bool(_) => (PhysicalType::BOOLEAN, None),
                };
                SchemaType::primitive_type_builder(name, physical)
                    .with_repetition(Repetition::OPTIONAL)
                    .with_logical_type(logical)
                    .build()
                    .map(Arc::new)
            })
            .collect::<std::result::Result<Vec<_>, _>>()
            .map_err(bad)?;
        let schema = SchemaType::group_type_builder("schema")
            .with_fields(fields)
            .build()
            .map_err(bad)?;
        let mut bytes = Vec::new();
        let mut writer =
            SerializedFileWriter::new(&mut bytes, Arc::new(schema), Arc::new(properties))
                .map_err(bad)?;
        for start in (0..height).step_by(ROW_GROUP) {
            let rows = start..height.min(start + ROW_GROUP);
            let mut group = writer.next_row_group().map_err(bad)?;
            for (name, v) in &self.columns {
                let mut column = group
                    .next_column()
                    .map_err(bad)?
                    .ok_or_else(|| Error::io(path, format!("no column writer for `{name}`")))?;
                // Every value is present but a float's None.
                let present = vec![1i16; rows.len()];
                match v {
                    Values::Str(v) => {
                        let values: Vec<ByteArray> = v[rows.clone()]
                            .iter()
                            .map(|s| ByteArray::from(s.as_str()))
                            .collect();
                        column
                            .typed::<ByteArrayType>()
                            .write_batch(&values, Some(&present), None)
                    }
                    Values::U64(v) => {
                        // INT64 holds the bits; the logical type says they are unsigned.
                        let values: Vec<i64> = v[rows.clone()].iter().map(|&x| x as i64).collect();
                        column
                            .typed::<Int64Type>()
                            .write_batch(&values, Some(&present), None)
                    }
                    Values::F64(v) => {
                        let v = &v[rows.clone()];
                        let values: Vec<f64> = v.iter().flatten().copied().collect();
                        let levels: Vec<i16> = v.iter().map(|x| i16::from(x.is_some())).collect();
                        column
                            .typed::<DoubleType>()
                            .write_batch(&values, Some(&levels), None)
                    }
                    Values::Bool(v) => column.typed::<BoolType>().write_batch(
                        &v[rows.clone()],
                        Some(&present),
                        None,
                    ),
                }
                .map_err(bad)?;
                column.close().map_err(bad)?;
            }
            group.close().map_err(bad)?;
        }
        writer.close().map_err(bad)?;
        Ok(bytes)
    }

    /// Reads a parquet table of string, unsigned 64-bit integer, double and boolean columns
    /// (what [`Table::write_parquet`] writes, and what polars wrote before it); a null reads as
    /// None in a float column and as the empty string, 0 or false in the others.
    pub fn read_parquet(path: &Path) -> Result<Table> {
        let bad = |e: ParquetError| Error::io(path, e);
        let file = super::output::open_limited(path, super::output::MAX_DATA_BYTES)?
            .ok_or_else(|| Error::io(path, "no such file"))?;
        let reader = SerializedFileReader::new(file).map_err(bad)?;
        check_size_and_codecs(path, reader.metadata())?;
        let schema = reader.metadata().file_metadata().schema_descr_ptr();
        let fields = schema.root_schema().get_fields();
        let mut columns = Vec::with_capacity(fields.len());
        for field in fields {
            let unsupported = |what: String| {
                Error::io(
                    path,
                    format!("column `{}` has unsupported type {what}", field.name()),
                )
            };
            if !field.is_primitive() {
                return Err(unsupported("(a group)".into()));
            }
            let i = columns.len();
            let descr = schema.column(i);
            if descr.max_rep_level() > 0 {
                return Err(unsupported("(a repeated field)".into()));
            }
            let logical = descr.logical_type_ref();
            let converted = descr.converted_type();
            let values = match descr.physical_type() {
                PhysicalType::BYTE_ARRAY
                    if matches!(logical, Some(LogicalType::String))
                        || (logical.is_none() && converted == ConvertedType::UTF8) =>
                {
                    Values::Str(Vec::new())
                }
                PhysicalType::INT64
                    if matches!(
                        logical,
                        Some(LogicalType::Integer(IntType {
                            bit_width: 64,
                            is_signed: false
                        }))
                    ) || (logical.is_none() && converted == ConvertedType::UINT_64) =>
                {
                    Values::U64(Vec::new())
                }
                PhysicalType::DOUBLE if logical.is_none() => Values::F64(Vec::new()),
                PhysicalType::BOOLEAN if logical.is_none() => Values::Bool(Vec::new()),
                physical => {
                    return Err(unsupported(match logical {
                        Some(l) => format!("{physical} ({l:?})"),
                        None => format!("{physical} ({converted})"),
                    }))
                }
            };
            columns.push((field.name().to_string(), values));
        }
        let max_def: Vec<i16> = (0..columns.len())
            .map(|i| schema.column(i).max_def_level())
            .collect();
        for g in 0..reader.num_row_groups() {
            let group = reader.get_row_group(g).map_err(bad)?;
            let rows = usize::try_from(group.metadata().num_rows())
                .map_err(|_| Error::io(path, format!("row group {g} has a negative size")))?;
            for (i, (name, values)) in columns.iter_mut().enumerate() {
                let column = group.get_column_reader(i).map_err(bad)?;
                let short =
                    || Error::io(path, format!("column `{name}` is short in row group {g}"));
                match (values, column) {
                    (Values::Str(out), ColumnReader::ByteArrayColumnReader(r)) => {
                        for x in read_chunk(r, rows, max_def[i])
                            .map_err(bad)?
                            .ok_or_else(short)?
                        {
                            out.push(match x {
                                Some(b) => b.as_utf8().map_err(bad)?.to_string(),
                                None => String::new(),
                            });
                        }
                    }
                    (Values::U64(out), ColumnReader::Int64ColumnReader(r)) => out.extend(
                        read_chunk(r, rows, max_def[i])
                            .map_err(bad)?
                            .ok_or_else(short)?
                            .into_iter()
                            .map(|x| x.map_or(0, |x| x as u64)),
                    ),
                    (Values::F64(out), ColumnReader::DoubleColumnReader(r)) => out.extend(
                        read_chunk(r, rows, max_def[i])
                            .map_err(bad)?
                            .ok_or_else(short)?,
                    ),
                    (Values::Bool(out), ColumnReader::BoolColumnReader(r)) => out.extend(
                        read_chunk(r, rows, max_def[i])
                            .map_err(bad)?
                            .ok_or_else(short)?
                            .into_iter()
                            .map(|x| x.unwrap_or(false)),
                    ),
                    _ => {
                        return Err(Error::io(
                            path,
                            format!("column `{name}` changes type in row group {g}"),
                        ))
                    }
                }
            }
        }
        Ok(Table { columns })
    }
}

/// Rows per row group of a written table (parquet-rs's default).
const ROW_GROUP: usize = 1024 * 1024;

/// The zstd level of written tables: zstd's own default (level 9 saved under 0.1% on
/// `kusner-suite`'s table).
const ZSTD_LEVEL: i32 = 3;

/// The `rows` values of one column chunk of a flat column (`max_def`: its maximum definition
/// level), None where null; None in all when the chunk holds fewer rows.
fn read_chunk<T: DataType>(
    mut reader: ColumnReaderImpl<T>,
    rows: usize,
    max_def: i16,
) -> std::result::Result<Option<Vec<Option<T::T>>>, ParquetError> {
    let mut values = Vec::with_capacity(rows);
    let mut levels = Vec::with_capacity(rows);
    let (read, _, _) = reader.read_records(rows, Some(&mut levels), None, &mut values)?;
    if read != rows {
        return Ok(None);
    }
    // A required column (no definition levels) has every value.
    if levels.is_empty() {
        return Ok((values.len() == rows).then(|| values.into_iter().map(Some).collect()));
    }
    let mut values = values.into_iter();
    Ok(Some(
        levels
            .iter()
            .map(|&l| if l == max_def { values.next() } else { None })
            .collect(),
    ))
}

pub use super::output::{write_atomically, write_bytes, write_text};

/// A rendered table: a header and rows of already formatted cells.
#[derive(Clone, Debug, PartialEq)]
pub struct Grid {
    pub caption: String,
    pub header: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

impl Grid {
    pub fn markdown(&self) -> String {
        let mut s = format!("**{}**\n\n", self.caption);
        // A literal `|` inside a cell would split it.
        let row = |cells: &[String]| {
            let cells: Vec<String> = cells.iter().map(|c| c.replace('|', "\\|")).collect();
            format!("| {} |\n", cells.join(" | "))
        };
        s += &row(&self.header);
        s += &format!("|{}\n", "---|".repeat(self.header.len()));
        for r in &self.rows {
            s += &row(r);
        }
        s
    }

    pub fn latex(&self) -> String {
        let esc = |t: &str| {
            t.replace('\\', "\\textbackslash{}")
                .replace('&', "\\&")
                .replace('%', "\\%")
                .replace('_', "\\_")
                .replace('#', "\\#")
                .replace('$', "\\$")
                .replace('±', "$\\pm$")
                .replace('|', "$|$")
                .replace('η', "$\\eta$")
                .replace('ε', "$\\varepsilon$")
                .replace('λ', "$\\lambda$")
                .replace('μ', "$\\mu$")
                .replace('≤', "$\\le$")
        };
        let mut s = String::from("\\begin{table}[ht]\n\\centering\n");
        s += &format!(
            "\\begin{{tabular}}{{l{}}}\n\\toprule\n",
            "r".repeat(self.header.len().saturating_sub(1))
        );
        s += &format!(
            "{} \\\\\n\\midrule\n",
            self.header
                .iter()
                .map(|h| esc(h))
                .collect::<Vec<_>>()
                .join(" & ")
        );
        for r in &self.rows {
            s += &format!(
                "{} \\\\\n",
                r.iter().map(|c| esc(c)).collect::<Vec<_>>().join(" & ")
            );
        }
        s += &format!(
            "\\bottomrule\n\\end{{tabular}}\n\\caption{{{}}}\n\\end{{table}}\n",
            esc(&self.caption)
        );
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Serialize)]
    struct Row {
        name: String,
        runs: usize,
        seed: u64,
        epsilon: f64,
        score: Option<f64>,
        released: bool,
    }

    #[test]
    fn typed_rows_make_the_same_table_as_columns() {
        let tiny = f64::from_bits(1); // the smallest subnormal: exact, not through text
        let rows = [
            Row {
                name: "a".into(),
                runs: 3,
                seed: u64::MAX,
                epsilon: 0.1 + 0.2,
                score: None,
                released: true,
            },
            Row {
                name: "b".into(),
                runs: 0,
                seed: 7,
                epsilon: f64::NAN,
                score: Some(tiny),
                released: false,
            },
        ];
        let expected = Table::default()
            .with("name", Values::Str(vec!["a".into(), "b".into()]))
            .with("runs", Values::U64(vec![3, 0]))
            .with("seed", Values::U64(vec![u64::MAX, 7]))
            .with("epsilon", Values::F64(vec![Some(0.1 + 0.2), None]))
            .with("score", Values::F64(vec![None, Some(tiny)]))
            .with("released", Values::Bool(vec![true, false]));
        assert_eq!(Table::from_rows(&rows).unwrap(), expected);
        assert_eq!(Table::from_rows::<Row>(&[]).unwrap(), Table::default());
        // A negative integer is no cell type of the harness's tables.
        #[derive(serde::Serialize)]
        struct Bad {
            delta: i64,
        }
        let e = Table::from_rows(&[Bad { delta: -1 }])
            .unwrap_err()
            .to_string();
        assert!(e.contains("column `delta`"), "{e}");
    }

    /// `rows` reads back what `from_rows` wrote, exactly, by name (a column the struct does
    /// not name is passed over); a null meets only an `Option` and the error names where.
    #[test]
    fn typed_rows_read_back_exactly_by_name() {
        #[derive(serde::Serialize, serde::Deserialize, Debug, PartialEq)]
        struct Back {
            seed: u64,
            score: Option<f64>,
            name: String,
            released: bool,
        }
        let rows = [
            Back {
                seed: u64::MAX,
                score: Some(f64::from_bits(1)),
                name: "a".into(),
                released: true,
            },
            Back {
                seed: 0,
                score: None,
                name: "b".into(),
                released: false,
            },
        ];
        let t = Table::from_rows(&rows)
            .unwrap()
            .with("extra", Values::F64(vec![Some(0.1 + 0.2), None]));
        assert_eq!(t.rows::<Back>().unwrap(), rows);
        #[derive(serde::Deserialize, Debug)]
        #[allow(dead_code)]
        struct Strict {
            extra: f64,
        }
        let e = t.rows::<Strict>().unwrap_err().to_string();
        assert!(e.contains("row 1") && e.contains("extra"), "{e}");
    }

    #[test]
    fn parquet_round_trip_keeps_types_and_nulls() {
        let t = Table::default()
            .with("name", Values::Str(vec!["a".into(), "b".into()]))
            .with("n", Values::U64(vec![1, u64::MAX]))
            .with("x", Values::F64(vec![Some(0.1), None]))
            .with("ok", Values::Bool(vec![true, false]));
        let dir = std::env::temp_dir().join(format!("dptune-table-{}", std::process::id()));
        let path = dir.join("t.parquet");
        t.write_parquet(&path).unwrap();
        assert_eq!(Table::read_parquet(&path).unwrap(), t);
        let leftovers: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .filter(|e| {
                e.as_ref()
                    .unwrap()
                    .file_name()
                    .to_string_lossy()
                    .ends_with(".tmp")
            })
            .collect();
        assert!(leftovers.is_empty());
        let mut u = t.clone();
        u.append(&t).unwrap();
        assert_eq!(u.height(), 4);
        assert!(u.append(&t.without("x")).is_err());
        std::fs::remove_dir_all(dir).unwrap();
    }

    /// Every cell type, nulls, signed zeros, the smallest subnormal, unicode and empty strings,
    /// a table without rows (its column types kept) and one without columns: read back bit for
    /// bit, in the schema pandas, pyarrow and polars read (u64 as unsigned INT64, text as
    /// String byte arrays).
    #[test]
    fn parquet_round_trip_is_exact_for_every_type_and_shape() {
        let t = Table::default()
            .with(
                "name",
                Values::Str(vec!["ε-DP ≤ 1 😀".into(), String::new(), "b".into()]),
            )
            .with("n", Values::U64(vec![0, u64::MAX, 1 << 63]))
            .with(
                "x",
                Values::F64(vec![Some(-0.0), None, Some(f64::from_bits(1))]),
            )
            .with("y", Values::F64(vec![None, None, None]))
            .with("ok", Values::Bool(vec![true, false, true]));
        let no_rows = Table {
            columns: t
                .columns
                .iter()
                .map(|(n, v)| {
                    let v = match v {
                        Values::Str(_) => Values::Str(vec![]),
                        Values::U64(_) => Values::U64(vec![]),
                        Values::F64(_) => Values::F64(vec![]),
                        Values::Bool(_) => Values::Bool(vec![]),
                    };
                    (n.clone(), v)
                })
                .collect(),
        };
        let bits = |t: &Table| -> Vec<Vec<Option<u64>>> {
            t.columns
                .iter()
                .filter_map(|(_, v)| match v {
                    Values::F64(v) => Some(v.iter().map(|x| x.map(f64::to_bits)).collect()),
                    _ => None,
                })
                .collect()
        };
        let dir = std::env::temp_dir().join(format!("dptune-table-types-{}", std::process::id()));
        for (k, table) in [&t, &no_rows, &Table::default()].into_iter().enumerate() {
            let path = dir.join(format!("{k}.parquet"));
            table.write_parquet(&path).unwrap();
            let back = Table::read_parquet(&path).unwrap();
            assert_eq!(&back, table, "table {k}");
            assert_eq!(bits(&back), bits(table), "table {k}");
        }
        let file =
            SerializedFileReader::new(std::fs::File::open(dir.join("0.parquet")).unwrap()).unwrap();
        let schema = file.metadata().file_metadata().schema_descr_ptr();
        let (name, n) = (schema.column(0), schema.column(1));
        assert_eq!(name.physical_type(), PhysicalType::BYTE_ARRAY);
        assert_eq!(name.logical_type_ref(), Some(&LogicalType::String));
        assert_eq!(n.physical_type(), PhysicalType::INT64);
        assert_eq!(n.logical_type_ref(), Some(&LogicalType::integer(64, false)));
        assert_eq!(n.converted_type(), ConvertedType::UINT_64);
        assert_eq!(schema.column(4).physical_type(), PhysicalType::BOOLEAN);
        std::fs::remove_dir_all(dir).unwrap();
    }

    /// A file another writer made: required columns read as well as optional ones, a null
    /// outside a float column reads as the empty string, 0 or false, and a column of another
    /// type is an error naming the file and the column.
    #[test]
    fn parquet_of_other_writers_reads_nulls_as_before_and_names_bad_columns() {
        use parquet::data_type::Int32Type;
        use parquet::schema::parser::parse_message_type;
        let write = |schema: &str,
                     path: &Path,
                     fill: &dyn Fn(
            &mut usize,
            &mut parquet::file::writer::SerializedColumnWriter,
        )| {
            let schema = Arc::new(parse_message_type(schema).unwrap());
            let file = std::fs::File::create(path).unwrap();
            let mut w = SerializedFileWriter::new(file, schema, Default::default()).unwrap();
            let mut g = w.next_row_group().unwrap();
            let mut i = 0;
            while let Some(mut c) = g.next_column().unwrap() {
                fill(&mut i, &mut c);
                c.close().unwrap();
                i += 1;
            }
            g.close().unwrap();
            w.close().unwrap();
        };
        let dir = std::env::temp_dir().join(format!("dptune-table-other-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("nulls.parquet");
        write(
            "message m {
                OPTIONAL BYTE_ARRAY s (UTF8);
                OPTIONAL INT64 u (INTEGER(64, false));
                OPTIONAL BOOLEAN b;
                REQUIRED DOUBLE x;
            }",
            &path,
            &|i, c| {
                match *i {
                    0 => c.typed::<ByteArrayType>().write_batch(
                        &[ByteArray::from("z")],
                        Some(&[0, 1]),
                        None,
                    ),
                    1 => c
                        .typed::<Int64Type>()
                        .write_batch(&[-1], Some(&[1, 0]), None),
                    2 => c
                        .typed::<BoolType>()
                        .write_batch(&[true], Some(&[0, 1]), None),
                    _ => c
                        .typed::<DoubleType>()
                        .write_batch(&[1.5, -2.0], None, None),
                }
                .unwrap();
            },
        );
        let expected = Table::default()
            .with("s", Values::Str(vec![String::new(), "z".into()]))
            .with("u", Values::U64(vec![u64::MAX, 0]))
            .with("b", Values::Bool(vec![false, true]))
            .with("x", Values::F64(vec![Some(1.5), Some(-2.0)]));
        assert_eq!(Table::read_parquet(&path).unwrap(), expected);
        let path = dir.join("int32.parquet");
        write(
            "message m { REQUIRED DOUBLE x; REQUIRED INT32 k; }",
            &path,
            &|i, c| {
                match *i {
                    0 => c.typed::<DoubleType>().write_batch(&[1.0], None, None),
                    _ => c.typed::<Int32Type>().write_batch(&[3], None, None),
                }
                .unwrap();
            },
        );
        let e = Table::read_parquet(&path).unwrap_err().to_string();
        assert!(
            e.contains("int32.parquet") && e.contains("column `k`"),
            "{e}"
        );
        std::fs::remove_dir_all(dir).unwrap();
    }

    /// The old format stays readable: tables polars 0.55 wrote (zstd, every column optional,
    /// with polars's own metadata), committed with the results.
    #[test]
    fn parquet_polars_wrote_reads_back() {
        // Copies of results as polars wrote them (results/ is rewritten by our own writer as
        // experiments are regenerated).
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/polars-written");
        let t = Table::read_parquet(&dir.join("dw-table1-budgets-budgets.parquet")).unwrap();
        assert_eq!(
            t.names(),
            [
                "experiment",
                "method",
                "accountant",
                "candidates",
                "epsilon_run",
                "eps_total",
                "delta_total"
            ]
        );
        assert_eq!(t.height(), 60);
        assert!(t
            .str("experiment")
            .unwrap()
            .iter()
            .all(|e| e == "dw-table1-budgets"));
        assert_eq!(
            t.str("method").unwrap()[2],
            "RandTune: TNB η = 0 (logarithmic K)"
        );
        assert_eq!(t.str("accountant").unwrap()[1], "optimal composition (KOV)");
        assert_eq!(t.u64("candidates").unwrap()[0], 10);
        assert_eq!(t.f64("epsilon_run").unwrap()[0], Some(0.5));
        assert_eq!(
            t.f64("eps_total").unwrap()[1].map(f64::to_bits),
            Some(4.998854120412943f64.to_bits())
        );
        assert_eq!(t.f64("delta_total").unwrap()[..2], [Some(0.0), Some(1e-5)]);
        // Polars's nulls (a float column of them) and booleans.
        let t = Table::read_parquet(&dir.join("dpareto-fig5-adult-efficiency.parquet")).unwrap();
        assert_eq!(t.str("task").unwrap()[2], "adult-svm-sgd");
        assert_eq!(t.u64("dpareto_evals").unwrap(), [64, 64, 64]);
        assert_eq!(t.f64("random_evals_to_match").unwrap(), [None, None, None]);
        assert_eq!(t.f64("dpareto_hv_lin").unwrap()[0], Some(8.393950499028659));
        let t = Table::read_parquet(&dir.join("dpsgd-equal-budget-fmnist-runs.parquet")).unwrap();
        assert_eq!(t.height(), 120);
        let fallback = t.bool("fallback").unwrap();
        assert_eq!(fallback[5..10], [false, true, true, true, false]);
        let released = t.f64("released_score").unwrap();
        assert_eq!((released[0], released[6]), (Some(0.6696159276832434), None));
        assert_eq!(t.f64("noise").unwrap()[0], Some(16.53125));
        assert_eq!(t.u64("runs").unwrap()[3], 14);
    }

    /// Issue 61: a table pandas or pyarrow rewrote (snappy, their default) reads back; gzip,
    /// lz4 and brotli, which this build lacks, are refused naming the codec and what to do,
    /// and a table too large to read whole is refused before it is decompressed.
    #[test]
    fn snappy_tables_read_and_missing_codecs_are_named() {
        let t = Table::default()
            .with("name", Values::Str(vec!["a".into(), "b".into()]))
            .with("x", Values::F64(vec![Some(0.5), None]))
            .with("n", Values::U64(vec![3, 4]))
            .with("ok", Values::Bool(vec![true, false]));
        let dir = std::env::temp_dir().join(format!("dptune-snappy-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("snappy.parquet");
        let snappy = WriterProperties::builder()
            .set_compression(Compression::SNAPPY)
            .build();
        std::fs::write(&path, t.encode(&path, snappy).unwrap()).unwrap();
        assert!(Table::read_parquet(&path).unwrap().identical(&t));
        let file = std::fs::File::open(&path).unwrap();
        let meta = SerializedFileReader::new(file).unwrap().metadata().clone();
        let with = |codec: Compression, size: i64| {
            let groups = meta
                .row_groups()
                .iter()
                .map(|g| {
                    let columns = g
                        .columns()
                        .iter()
                        .map(|c| {
                            c.clone()
                                .into_builder()
                                .set_compression(codec)
                                .build()
                                .unwrap()
                        })
                        .collect();
                    g.clone()
                        .into_builder()
                        .set_column_metadata(columns)
                        .set_total_byte_size(size)
                        .build()
                        .unwrap()
                })
                .collect();
            let m =
                parquet::file::metadata::ParquetMetaData::new(meta.file_metadata().clone(), groups);
            check_size_and_codecs(&path, &m).map_err(|e| e.to_string())
        };
        assert_eq!(with(Compression::SNAPPY, 100), Ok(()));
        assert_eq!(with(Compression::UNCOMPRESSED, 100), Ok(()));
        for (codec, name) in [
            (Compression::GZIP(Default::default()), "gzip"),
            (Compression::LZ4, "lz4"),
            (Compression::LZ4_RAW, "lz4_raw"),
            (Compression::BROTLI(Default::default()), "brotli"),
        ] {
            let e = with(codec, 100).unwrap_err();
            assert!(
                e.contains(&format!("column `name` is compressed with {name}"))
                    && e.contains("write it again with zstd or snappy"),
                "{e}"
            );
        }
        let e = with(
            Compression::ZSTD(Default::default()),
            MAX_UNCOMPRESSED_BYTES + 1,
        )
        .unwrap_err();
        assert!(e.contains("bytes uncompressed, more than"), "{e}");
        std::fs::remove_dir_all(dir).unwrap();
    }

    /// A table whose file already reads back bit for bit is not written again (the file keeps
    /// its bytes); any difference, a signed zero's included, writes it.
    #[test]
    fn unchanged_tables_keep_their_files() {
        let t = Table::default()
            .with("name", Values::Str(vec!["a".into()]))
            .with("x", Values::F64(vec![Some(0.0)]));
        let dir = std::env::temp_dir().join(format!("dptune-table-same-{}", std::process::id()));
        let path = dir.join("t.parquet");
        assert!(t.write_parquet_if_changed(&path).unwrap());
        // Other bytes of the same table (as another writer's would be).
        std::fs::write(&path, t.encode(&path, WriterProperties::default()).unwrap()).unwrap();
        let before = std::fs::read(&path).unwrap();
        assert_ne!(before, t.parquet_bytes(&path).unwrap());
        assert!(!t.write_parquet_if_changed(&path).unwrap());
        assert_eq!(std::fs::read(&path).unwrap(), before);
        let negative = Table::default()
            .with("name", Values::Str(vec!["a".into()]))
            .with("x", Values::F64(vec![Some(-0.0)]));
        assert_eq!(negative, t);
        assert!(!negative.identical(&t));
        assert!(negative.write_parquet_if_changed(&path).unwrap());
        assert!(Table::read_parquet(&path).unwrap().identical(&negative));
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn latex_escapes_and_markdown_aligns() {
        let g = Grid {
            caption: "ε at 5% & more".into(),
            header: vec!["dist".into(), "E[K]=10".into()],
            rows: vec![vec!["tnb_η".into(), "1 ± 2".into()]],
        };
        assert!(g.markdown().contains("| tnb_η | 1 ± 2 |"));
        let l = g.latex();
        assert!(l.contains("5\\% \\& more") && l.contains("tnb\\_$\\eta$") && l.contains("$\\pm$"));
    }
}
