//! The largest `n` of a stream, kept in a bounded heap: the lists of the reports (`dfdu
//! scan`'s largest directories and files, `dfdu diff`'s changes), which see every entry
//! once and keep only the rows they show.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// The `n` largest values pushed, and how many were pushed.
pub struct Top<T: Ord> {
    n: usize,
    heap: BinaryHeap<Reverse<T>>,
    /// Every value pushed, kept or not (a report says how many there were).
    pub count: u64,
}

impl<T: Ord> Top<T> {
    pub fn new(n: usize) -> Self {
        Top { n, heap: BinaryHeap::new(), count: 0 }
    }

    pub fn push(&mut self, v: T) {
        self.count += 1;
        if self.n == 0 || (self.heap.len() == self.n && self.heap.peek().is_some_and(|Reverse(min)| v <= *min)) {
            return;
        }
        self.heap.push(Reverse(v));
        if self.heap.len() > self.n {
            self.heap.pop();
        }
    }

    /// What was kept, largest first.
    pub fn sorted(self) -> Vec<T> {
        self.heap.into_sorted_vec().into_iter().map(|Reverse(v)| v).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_largest_n_and_counts_every_one() {
        let mut t = Top::new(3);
        for v in [5, 1, 9, 7, 3, 9, 2] {
            t.push(v);
        }
        assert_eq!(t.count, 7);
        assert_eq!(t.sorted(), [9, 9, 7]);
        let mut none = Top::new(0);
        none.push(1);
        assert_eq!((none.count, none.sorted()), (1, Vec::<i32>::new()));
    }
}
