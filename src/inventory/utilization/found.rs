//! What one node's idle series add up to, per holding: units counted one series each (a whole GPU, a MIG
//! instance, a DRA device), a holding idle in full (a share of an idle shared GPU), and the parts of a sharing
//! layer's idle cards; then each holding's idle units and GPU-equivalents.

use crate::inventory::model::{Holding, IdleHolding};

/// The idle holdings of one node, as its series are placed.
#[derive(Default)]
pub(super) struct Found<'n> {
    units: Vec<(&'n Holding, Units<'n>)>,
}

/// What the idle series of one holding add up to.
struct Units<'n> {
    /// Series counted one unit each.
    count: u64,
    /// Idle in full: every unit it holds is on an idle device.
    full: bool,
    /// Idle cards of a sharing layer and the holder's part of each (thousandths), each card once.
    cards: Vec<(&'n str, u64)>,
    since: jiff::Timestamp,
}

impl<'n> Found<'n> {
    fn at(&mut self, holding: &'n Holding, since: jiff::Timestamp) -> &mut Units<'n> {
        let at = match self
            .units
            .iter()
            .position(|(h, _)| std::ptr::eq(*h, holding))
        {
            Some(at) => at,
            None => {
                self.units.push((
                    holding,
                    Units {
                        count: 0,
                        full: false,
                        cards: Vec::new(),
                        since,
                    },
                ));
                self.units.len() - 1
            }
        };
        let units = &mut self.units[at].1;
        units.since = units.since.max(since);
        units
    }

    /// One more idle unit of `holding`.
    pub(super) fn unit(&mut self, holding: &'n Holding, since: jiff::Timestamp) {
        self.at(holding, since).count += 1;
    }

    /// All of `holding` idle.
    pub(super) fn full(&mut self, holding: &'n Holding, since: jiff::Timestamp) {
        self.at(holding, since).full = true;
    }

    /// The holder's part (`milli`) of the idle card `card` is `holding`'s; a card counts once however many
    /// series it has.
    pub(super) fn card(
        &mut self,
        holding: &'n Holding,
        card: &'n str,
        milli: u64,
        since: jiff::Timestamp,
    ) {
        let units = self.at(holding, since);
        if !units.cards.iter().any(|(id, _)| *id == card) {
            units.cards.push((card, milli));
        }
    }

    /// The idle holdings, sorted: never more units than held, nor more GPU-equivalents than the holding's.
    pub(super) fn into_list(self) -> Vec<IdleHolding> {
        let mut list: Vec<IdleHolding> = self
            .units
            .into_iter()
            .map(|(holding, found)| {
                let cards = found.cards.len() as u64;
                let amount = match found.full {
                    true => holding.amount,
                    false => found.count.saturating_add(cards).min(holding.amount),
                };
                IdleHolding {
                    holder: holding.holder.clone(),
                    resource: holding.resource.clone(),
                    amount,
                    equivalent_milli: equivalent(holding, &found),
                    idle_since: found.since,
                }
            })
            .collect();
        list.sort();
        list
    }
}

/// The idle part of `holding`'s GPU-equivalent: all of it when idle in full; else its units' share of it
/// plus its parts of idle cards, at most all of it. `None` where the holding has none and no card part.
fn equivalent(holding: &Holding, found: &Units<'_>) -> Option<u64> {
    let whole = holding.equivalent.map(|e| e.milli);
    if found.full {
        return whole;
    }
    let units = whole.filter(|_| found.count > 0).map(|milli| {
        let count = found.count.min(holding.amount);
        milli.saturating_mul(count) / holding.amount.max(1)
    });
    let cards = (!found.cards.is_empty()).then(|| found.cards.iter().map(|(_, m)| m).sum::<u64>());
    match (units, cards) {
        (None, None) => None,
        (units, cards) => Some(
            units
                .unwrap_or(0)
                .saturating_add(cards.unwrap_or(0))
                .min(whole.unwrap_or(u64::MAX)),
        ),
    }
}
