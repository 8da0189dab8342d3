//! How Deep Learning Computes — the generator.
//!
//! The pipeline runs one way: `load → validate → measure → render → write`, one module a stage.
//! `site` strings the stages together and times each one; `cli` is the thin command layer.
//!
//! Why a library with a thin binary: every stage can be tested in-process, and tests build books
//! in temporary folders without spawning the command.

pub mod calc;
pub mod cli;
pub mod cpubench;
pub mod diag;
pub mod figspec;
pub mod graph;
pub mod include;
pub mod load;
pub mod markup;
pub mod measure;
pub mod metric_names;
pub mod model;
pub mod parallel;
pub mod prose;
pub mod records;
pub mod render;
pub mod search_docs;
pub mod search_index;
pub mod serve;
pub mod site;
pub mod validate;
pub mod verify;
pub mod write;
