//! The flag table as serde data, for the web front end.

use super::*;

/// One flag of [`args::FLAGS`] as data (for the web front end's argument handling and help).
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct FlagInfo {
    pub name: &'static str,
    pub aliases: &'static [&'static str],
    /// Value words as the usage text shows them ("" for a switch).
    pub values: &'static str,
    pub min_values: u8,
    pub max_values: u8,
    pub kind: args::Kind,
    pub group: args::Group,
    pub check: args::Check,
    /// The flag's values count pixels (or its file fixes the pixel grid): a reduced-resolution
    /// preview cannot keep it.
    pub pixel_units: bool,
    pub help: &'static str,
}

/// Every flag the simulator accepts, from the one table the parser dispatches through.
pub fn flag_table() -> Vec<FlagInfo> {
    args::FLAGS
        .iter()
        .map(|f| FlagInfo {
            name: f.name,
            aliases: f.aliases,
            values: f.values,
            min_values: f.arity.0,
            max_values: f.arity.1,
            kind: f.kind,
            group: f.group,
            check: f.check,
            pixel_units: f.pixel_units,
            help: f.help,
        })
        .collect()
}
