//! The integration tests of the library, one module per concern, in one binary (one link
//! instead of one per file).

mod common;

mod api;
mod batch;
mod codec_twins;
mod corruption;
mod design_cover;
mod documents;
mod exact;
mod exact_sites;
mod golden;
mod index_oracle;
mod manifest_attacks;
mod populate;
mod power_loss;
mod simhash;
mod store;
mod store_batch;
mod store_crash;
mod store_fork;
mod table_oracle;
