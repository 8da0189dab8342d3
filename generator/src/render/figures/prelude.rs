//! What a view file needs, in one `use super::prelude::*;` line.
//!
//! Why: views are meant to be small files that only draw; they should not have to list a dozen
//! imports from the shared parts before the first line of drawing code.

pub(super) use super::caption::*;
pub(super) use super::classify::*;
pub(super) use super::family::*;
pub(super) use super::format::*;
pub(super) use super::style::*;
pub(super) use super::Ctx;
pub(super) use crate::measure::results::{Outcome, Record};
pub(super) use plotters::prelude::*;
pub(super) use plotters::style::text_anchor::{HPos, Pos, VPos};
pub(super) use std::fmt::Write as _;
