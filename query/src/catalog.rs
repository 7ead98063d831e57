//! The session's catalog as a table: every table and column with its
//! type and documentation, tracepoint events' typed views included.

use std::sync::Arc;

use datafusion::arrow::record_batch::RecordBatch;

use crate::error::Result;
use crate::rows::string_values;
use crate::session::Session;

impl Session {
    /// Every table and column of the session (stored and derived; names
    /// starting with `_` are internal) with its type, nullability and the
    /// sentence of documentation the schema gives it.
    pub async fn columns(&self) -> Result<Vec<RecordBatch>> {
        use datafusion::arrow::array::StringBuilder;
        use datafusion::arrow::datatypes::{DataType, Field, Schema};
        let q = "SELECT table_name, column_name, data_type, is_nullable FROM information_schema.columns \
                 WHERE table_schema = 'public' AND table_name NOT LIKE '\\_%' ESCAPE '\\' ORDER BY table_name, ordinal_position";
        let mut out = Vec::new();
        for b in self.sql(q).await?.collect().await? {
            let t = string_values(b.column(0));
            let c = string_values(b.column(1));
            let mut doc = StringBuilder::new();
            for i in 0..b.num_rows() {
                let (tv, cv) = (t[i].as_deref().unwrap_or(""), c[i].as_deref().unwrap_or(""));
                let d = if cv == "capture" {
                    Some("Name of the capture directory the row comes from.")
                } else {
                    trawl_capture::schema::table(tv)
                        .and_then(|d| d.columns.iter().find(|col| col.name == cv))
                        .map(|col| col.doc)
                };
                doc.append_option(d);
            }
            let mut cols = b.columns().to_vec();
            cols.push(Arc::new(doc.finish()));
            let mut fields: Vec<Field> = b
                .schema()
                .fields()
                .iter()
                .map(|f| f.as_ref().clone())
                .collect();
            fields.push(Field::new("description", DataType::Utf8, true));
            out.push(
                RecordBatch::try_new(Arc::new(Schema::new(fields)), cols)
                    .map_err(datafusion::error::DataFusionError::from)?,
            );
        }
        // Each tracepoint event's typed view, as `tracepoint('EVENT')`.
        let rows = crate::tracepoint::event_columns(&self.shared)?;
        if let (Some(first), false) = (out.first(), rows.is_empty()) {
            let schema = first.schema();
            let column = |k: usize, f: &dyn Fn(&[String; 4]) -> Option<String>| {
                let mut b = StringBuilder::new();
                for r in &rows {
                    b.append_option(f(r));
                }
                datafusion::arrow::compute::cast(&b.finish(), schema.field(k).data_type())
                    .map_err(datafusion::error::DataFusionError::from)
            };
            let cols = vec![
                column(0, &|r| Some(format!("tracepoint('{}')", r[0])))?,
                column(1, &|r| Some(r[1].clone()))?,
                column(2, &|r| Some(r[2].clone()))?,
                column(3, &|_| Some("YES".to_string()))?,
                column(4, &|r| Some(r[3].clone()))?,
            ];
            out.push(
                RecordBatch::try_new(schema, cols)
                    .map_err(datafusion::error::DataFusionError::from)?,
            );
        }
        Ok(out)
    }
}
