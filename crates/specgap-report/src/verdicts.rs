//! [`ByK`]: an episode's verdicts (test outcomes, requirement passes) by submission k and name,
//! held as one sorted vector instead of a map of maps.
//!
//! A report holds one [`crate::episode::Episode`] per stored episode (10^6 in a large study).
//! Two nested `BTreeMap`s per episode cost a B-tree node each (about 300 B for the outer map
//! and 200 B per inner map even for four verdicts); a sorted vector of `(k, name, verdict)`
//! costs 24 B per verdict. Lookups are binary searches; the order of iteration (k, then name
//! bytewise) is the maps' order, so every measure computed over it is unchanged.

/// Verdicts of type `V` by (k, name), sorted, one per (k, name).
#[derive(Debug, Clone)]
pub struct ByK<'a, V> {
    entries: Vec<(u32, &'a str, V)>,
}

impl<V> Default for ByK<'_, V> {
    fn default() -> Self {
        ByK { entries: Vec::new() }
    }
}

impl<'a, V: Copy> ByK<'a, V> {
    /// Adds a verdict; [`ByK::finish`] must follow the last one.
    pub(crate) fn push(&mut self, k: u32, name: &'a str, verdict: V) {
        self.entries.push((k, name, verdict));
    }

    /// Sorts the verdicts pushed so far. For a (k, name) given twice the later one wins, as
    /// inserting them into a map one by one would. Rows read from a store come in primary-key
    /// order already, which costs one linear check.
    pub(crate) fn finish(&mut self) {
        let key = |e: &(u32, &'a str, V)| (e.0, e.1);
        if !self.entries.windows(2).all(|w| key(&w[0]) < key(&w[1])) {
            // Stable, so equal keys keep their order; `dedup_by` keeps the first of a run of
            // equal keys, which takes the value of each later one in turn.
            self.entries.sort_by_key(key);
            self.entries.dedup_by(|later, kept| {
                let same = key(later) == key(kept);
                if same {
                    *kept = *later;
                }
                same
            });
        }
        self.entries.shrink_to_fit();
    }

    /// Whether no verdict is held at all.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The verdicts at submission `k` (0 = the starting state); `None` when none is held.
    pub fn get(&self, k: u32) -> Option<Verdicts<'_, 'a, V>> {
        let from = self.entries.partition_point(|e| e.0 < k);
        let to = from + self.entries[from..].partition_point(|e| e.0 == k);
        (to > from).then(|| Verdicts { entries: &self.entries[from..to] })
    }
}

/// The verdicts of one submission, by name (sorted bytewise).
#[derive(Debug, Clone, Copy)]
pub struct Verdicts<'t, 'a, V> {
    entries: &'t [(u32, &'a str, V)],
}

impl<'t, 'a, V: Copy> Verdicts<'t, 'a, V> {
    /// How many names have a verdict.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether no name has a verdict (never, for a table returned by [`ByK::get`]).
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The verdict on `name`.
    pub fn get(&self, name: &str) -> Option<V> {
        self.entries.binary_search_by(|e| e.1.cmp(name)).ok().map(|i| self.entries[i].2)
    }

    /// (name, verdict) in name order.
    pub fn iter(&self) -> impl Iterator<Item = (&'a str, V)> + 't {
        self.entries.iter().map(|e| (e.1, e.2))
    }

    /// The verdicts in name order.
    pub fn values(&self) -> impl Iterator<Item = V> + 't {
        self.entries.iter().map(|e| e.2)
    }
}

#[cfg(test)]
mod tests {
    use super::ByK;

    /// A table of `entries` pushed in this order.
    fn pushed<V: Copy>(entries: Vec<(u32, &str, V)>) -> ByK<'_, V> {
        let mut table = ByK::default();
        for (k, name, verdict) in entries {
            table.push(k, name, verdict);
        }
        table.finish();
        table
    }

    #[test]
    fn lookups_follow_k_then_name_and_the_later_duplicate_wins() {
        let table = pushed(vec![(2, "b", 1), (0, "z", 2), (2, "a", 3), (0, "z", 4), (5, "a", 5)]);
        assert!(!table.is_empty());
        assert_eq!(table.get(0).map(|v| v.iter().collect::<Vec<_>>()), Some(vec![("z", 4)]));
        let at_two = table.get(2).map(|v| (v.len(), v.iter().collect::<Vec<_>>(), v.get("b"), v.get("c")));
        assert_eq!(at_two, Some((2, vec![("a", 3), ("b", 1)], Some(1), None)));
        assert_eq!(table.get(1).map(|v| v.len()), None);
        assert_eq!(table.get(5).map(|v| v.values().collect::<Vec<_>>()), Some(vec![5]));
        assert_eq!(table.get(6).map(|v| v.len()), None);
        assert!(pushed::<bool>(Vec::new()).is_empty());
    }

    #[test]
    fn sorted_input_is_kept_as_given() {
        let table = pushed(vec![(1, "a", true), (1, "b", false), (3, "a", true)]);
        assert_eq!(table.get(1).map(|v| v.iter().collect::<Vec<_>>()), Some(vec![("a", true), ("b", false)]));
        assert_eq!(table.get(3).and_then(|v| v.get("a")), Some(true));
    }
}
