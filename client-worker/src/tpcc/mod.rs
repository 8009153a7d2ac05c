//! A TPC-C-like workload as DBT-2 runs it: the nine tables, a loader parallel across
//! workers, the five transactions with the standard mix, NOTPM, and the consistency checks.
//!
//! Steps ([`TpccStep`]): `schema` (drop, create, load item; one worker),
//! `load` (this worker's warehouses: w with (w - 1) % parts == part), `finish` (keys,
//! DBT-2's indexes, VACUUM ANALYZE), `check` (consistency conditions 1 to 10 and 12).
//! The measured window: [`run`], its terminals split over load threads (`thread`), each
//! running its share as tasks of its own executor (`driver`).

mod check;
mod driver;
mod load;
mod params;
pub mod rand;
mod run;
mod schema;
mod step;
mod thread;
mod txn;

pub use driver::NAMES as TXN_NAMES;
pub use params::{
    CUSTOMERS_PER_DISTRICT, DISTRICTS, ITEMS, ORDERS_PER_DISTRICT, TpccOptions, TpccStep,
    warehouses_of_part,
};
pub use run::run;
pub use schema::TABLES;
pub use step::step;
