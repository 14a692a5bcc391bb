//! The timeline's bounded memory. A watch is meant to run for weeks against servers that may
//! send anything, so what it remembers per notification is capped: the last [`KEPT_EVENTS`]
//! events (older ones retire and are only counted) and the last [`KEPT_KEYS`] `(type, seq)`
//! keys used to recognise a re-sent notification.

use std::collections::{HashMap, VecDeque};
use std::hash::Hash;

/// Events kept for lines that refer back to them and for the summary's rows.
pub const KEPT_EVENTS: usize = 100;

/// `(type, seq)` keys remembered to tell a re-sent notification from a new one. A MOVING is
/// re-sent to each new opt-in while its window is open, so only recent keys matter.
pub const KEPT_KEYS: usize = 10_000;

/// The most recent events, addressed by a global index that stays valid as older events retire
/// (a retired index simply finds nothing).
pub struct Events<E> {
    kept: VecDeque<E>,
    /// The global index of `kept[0]`: how many events retired.
    first: usize,
}

impl<E> Default for Events<E> {
    fn default() -> Self {
        Events {
            kept: VecDeque::new(),
            first: 0,
        }
    }
}

impl<E> Events<E> {
    /// The index the next pushed event gets.
    pub fn len(&self) -> usize {
        self.first + self.kept.len()
    }

    pub fn push(&mut self, event: E) {
        if self.kept.len() == KEPT_EVENTS {
            self.kept.pop_front();
            self.first += 1;
        }
        self.kept.push_back(event);
    }

    pub fn get(&self, i: usize) -> Option<&E> {
        self.kept.get(i.checked_sub(self.first)?)
    }

    pub fn get_mut(&mut self, i: usize) -> Option<&mut E> {
        self.kept.get_mut(i.checked_sub(self.first)?)
    }

    /// The kept events, oldest first.
    pub fn iter(&self) -> impl Iterator<Item = &E> {
        self.kept.iter()
    }

    /// The kept events, oldest first, to change.
    pub fn iter_mut(&mut self) -> impl Iterator<Item = &mut E> {
        self.kept.iter_mut()
    }

    /// The index of the last kept event matching `f`.
    pub fn rposition(&self, f: impl FnMut(&E) -> bool) -> Option<usize> {
        self.kept.iter().rposition(f).map(|j| j + self.first)
    }

    /// How many events retired.
    pub fn retired(&self) -> u64 {
        self.first as u64
    }
}

/// A kept event; indexing a retired one is a bug of the caller (who holds indexes it got from
/// a lookup that found the event).
impl<E> std::ops::Index<usize> for Events<E> {
    type Output = E;
    fn index(&self, i: usize) -> &E {
        self.get(i).expect("a kept event")
    }
}

impl<E> std::ops::IndexMut<usize> for Events<E> {
    fn index_mut(&mut self, i: usize) -> &mut E {
        self.get_mut(i).expect("a kept event")
    }
}

/// The most recent keys, each with the event it opened (if any); the oldest is forgotten first.
pub struct RecentKeys<K> {
    map: HashMap<K, Option<usize>>,
    order: VecDeque<K>,
}

impl<K> Default for RecentKeys<K> {
    fn default() -> Self {
        RecentKeys {
            map: HashMap::new(),
            order: VecDeque::new(),
        }
    }
}

impl<K: Hash + Eq + Copy> RecentKeys<K> {
    /// Remembers `key`; false when it was already remembered.
    pub fn insert(&mut self, key: K) -> bool {
        if self.map.contains_key(&key) {
            return false;
        }
        if self.order.len() == KEPT_KEYS {
            if let Some(old) = self.order.pop_front() {
                self.map.remove(&old);
            }
        }
        self.map.insert(key, None);
        self.order.push_back(key);
        true
    }

    /// The event `key` opened, if it is still remembered.
    pub fn event(&self, key: &K) -> Option<usize> {
        self.map.get(key).copied().flatten()
    }

    /// Records the event `key` opened (a no-op once the key is forgotten).
    pub fn set_event(&mut self, key: K, event: usize) {
        if let Some(slot) = self.map.get_mut(&key) {
            *slot = Some(event);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_keep_the_last_ones_and_old_indexes_find_nothing() {
        let mut events = Events::default();
        for i in 0..KEPT_EVENTS + 5 {
            assert_eq!(events.len(), i);
            events.push(i);
        }
        assert_eq!(events.retired(), 5);
        assert_eq!(events.get(4), None);
        assert_eq!(events.get(5), Some(&5));
        assert_eq!(events.iter().count(), KEPT_EVENTS);
        assert_eq!(events.rposition(|&e| e == 7), Some(7));
        assert_eq!(events.rposition(|&e| e == 2), None);
    }

    #[test]
    fn keys_forget_the_oldest_past_the_bound() {
        let mut keys = RecentKeys::default();
        assert!(keys.insert(0u32));
        keys.set_event(0, 9);
        assert!(!keys.insert(0));
        assert_eq!(keys.event(&0), Some(9));
        for k in 1..=KEPT_KEYS as u32 {
            assert!(keys.insert(k));
        }
        assert_eq!(keys.map.len(), KEPT_KEYS);
        assert_eq!(keys.event(&0), None, "the oldest was forgotten");
        assert!(keys.insert(0), "and is new again");
    }
}
