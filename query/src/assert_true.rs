//! `assert_true(condition, message)`: true, or the query fails with
//! `message` (a NULL condition fails too). Analyses written in SQL check
//! their arguments against the data with it, e.g. that a page size is a
//! multiple of the one a capture was ingested with.

use std::sync::Arc;

use datafusion::arrow::array::{Array, AsArray, BooleanArray};
use datafusion::arrow::datatypes::DataType;
use datafusion::common::exec_err;
use datafusion::logical_expr::{create_udf, ColumnarValue, ScalarUDF, Volatility};

pub fn udf() -> ScalarUDF {
    create_udf(
        "assert_true",
        vec![DataType::Boolean, DataType::Utf8],
        DataType::Boolean,
        Volatility::Immutable,
        Arc::new(|args: &[ColumnarValue]| {
            let arrays = ColumnarValue::values_to_arrays(args)?;
            let cond = arrays[0].as_boolean();
            let msg = arrays[1].as_string::<i32>();
            for i in 0..cond.len() {
                if cond.is_null(i) || !cond.value(i) {
                    let m = if msg.is_null(i) {
                        "assert_true failed"
                    } else {
                        msg.value(i)
                    };
                    return exec_err!("{m}");
                }
            }
            let n = cond.len();
            let out = BooleanArray::from(vec![true; n]);
            Ok(
                if args.iter().all(|a| matches!(a, ColumnarValue::Scalar(_))) {
                    ColumnarValue::Scalar(datafusion::scalar::ScalarValue::Boolean(Some(true)))
                } else {
                    ColumnarValue::Array(Arc::new(out))
                },
            )
        }),
    )
}
