//! Which of a holder's holdings a series measures.

use super::series::IdleSeries;
use crate::inventory::model::{Holder, Holding};

/// A holding a series may measure.
#[derive(Clone, Copy)]
pub(super) struct Place<'a> {
    pub(super) holding: &'a Holding,
}

/// Among one holder's holdings, the one the series measures: its DRA device's, else one of its kind that
/// places the holder on a GPU (has a GPU-equivalent: `nvidia.com/gpu` rather than HAMi's `gpumem` beside it),
/// else one of its kind, else any.
pub(super) fn pick<'a>(
    mut places: impl Iterator<Item = Place<'a>> + Clone,
    series: &IdleSeries,
) -> Option<Place<'a>> {
    if series.dra_device.is_some()
        && let Some(place) = places
            .clone()
            .find(|p| p.holding.device.is_some() && p.holding.device == series.dra_device)
    {
        return Some(place);
    }
    places
        .clone()
        .find(|p| p.holding.equivalent.is_some() && measures(series, &p.holding.resource))
        .or_else(|| {
            places
                .clone()
                .find(|p| measures(series, &p.holding.resource))
        })
        .or_else(|| places.next())
}

/// `holder`'s holdings on a node, as places.
pub(super) fn places_of<'a>(
    holdings: &'a [Holding],
    holder: &'a Holder,
) -> impl Iterator<Item = Place<'a>> + Clone {
    holdings
        .iter()
        .filter(move |h| &h.holder == holder)
        .map(|holding| Place { holding })
}

/// Whether a series measures units of `resource`: a MIG instance's series its profile's resource
/// (`nvidia.com/mig-1g.10gb`), a whole GPU's series any other.
pub(super) fn measures(series: &IdleSeries, resource: &str) -> bool {
    let unit = resource.rsplit('/').next().unwrap_or(resource);
    match (&series.mig_profile, unit.strip_prefix("mig-")) {
        (Some(profile), Some(of)) => of == profile,
        (None, None) => true,
        _ => false,
    }
}
