//! `trawl tables`: the tables of captures, their rows and columns.

use crate::*;

pub(crate) async fn tables(captures: Vec<PathBuf>) -> Result<()> {
    let s = crate::open(&captures).await?;
    let q = "SELECT table_name, column_name, data_type, is_nullable FROM information_schema.columns \
             WHERE table_schema = 'public' AND table_name NOT LIKE '\\_%' ESCAPE '\\' ORDER BY table_name, ordinal_position";
    let df = s.sql(q).await?;
    let batches = df.collect().await?;
    // Add each column's documentation from the schema definitions.
    use trawl_ingest::arrow::array::StringBuilder;
    use trawl_ingest::arrow::datatypes::{DataType, Field, Schema};
    let mut out = Vec::new();
    for b in batches {
        let t = trawl_query::string_values(b.column(0));
        let c = trawl_query::string_values(b.column(1));
        let mut doc = StringBuilder::new();
        for i in 0..b.num_rows() {
            let (tv, cv) = (t[i].as_deref().unwrap_or(""), c[i].as_deref().unwrap_or(""));
            let def = trawl_ingest::schema::table(tv);
            let d = if cv == "capture" {
                Some("Name of the capture directory the row comes from.")
            } else {
                def.and_then(|d| d.columns.iter().find(|col| col.name == cv))
                    .map(|col| col.doc)
            };
            doc.append_option(d);
        }
        let mut cols = b.columns().to_vec();
        cols.push(std::sync::Arc::new(doc.finish()));
        let mut fields: Vec<Field> = b
            .schema()
            .fields()
            .iter()
            .map(|f| f.as_ref().clone())
            .collect();
        fields.push(Field::new("description", DataType::Utf8, true));
        out.push(trawl_ingest::arrow::record_batch::RecordBatch::try_new(
            std::sync::Arc::new(Schema::new(fields)),
            cols,
        )?);
    }
    output::write(&out, &OutputOpts::default())
}
