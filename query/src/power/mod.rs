//! The power model and energy-based samples (Ono et al. 2015,
//! sampling-based power measurement, §3.2–3.5).
//!
//! - [`PowerFit`]: the SQL aggregate `power_fit(watts, rate1, …, rateK)`:
//!   multiple linear regression `watts = a + Σ c_i · rate_i` (least
//!   squares), returning `{intercept, coefficients, r2, n}`. Rows with a
//!   null or non-finite value are left out.
//! - [`model_intervals`]: the rows a model is fitted on, one per interval
//!   of a domain's energy counter: its energy, watts and each event's rate
//!   (the counter's increase read at the samples in the interval, or the
//!   sampled periods when the event is sampled, not read).
//! - [`fit`] (the same least squares as `power_fit`) and [`fit_table`]:
//!   coefficients, R², R_i = P / c_i (§3.3, Table 3).
//! - [`power_samples`]: samples of several events merged in time order and
//!   cut into runs whose modelled energy reaches a target P (§3.5); each
//!   run is a power datum whose measured energy (the RAPL counter over the
//!   run) shows how close the sampling came to equal-energy samples;
//!   compared with runs of N consecutive time-based samples (Table 6,
//!   Fig. 6/8), for every subset of the events.

mod fit;
mod inputs;
mod model;
mod samples;

pub(crate) use fit::udaf;
pub use fit::{fit, fit_table, ols, Fit, PowerFit};
pub use inputs::{read_events, sampled_events};
pub use model::{model_intervals, ModelInput, ModelSource};
pub use samples::{datum_values, power_samples, Model, PowerSamplesInput};
