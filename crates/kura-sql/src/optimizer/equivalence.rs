//! Equivalence classes of a join region's column equalities: `a = b` and `b = c`
//! also join `a` with `c` directly. Join ordering may then join any two inputs
//! that hold members of one class (TPC-H Q9: `part` with `partsupp` through
//! `lineitem`'s `l_partkey`), and each join applies one equality per class it
//! connects, so implied equalities are never applied (or estimated) twice.

use kura_common::DataType;
use kura_exec::expr::{BinaryOp, PhysExpr};

use super::cardinality::Estimate;
use crate::logical::ColId;

/// One member of a class: a column and the input (bit) it belongs to.
#[derive(Debug, Clone)]
struct Member {
    col: ColId,
    data_type: DataType,
    input: u32,
}

/// Columns known equal, each in a different input of the region.
#[derive(Debug, Clone, Default)]
pub struct Classes {
    classes: Vec<Vec<Member>>,
}

fn column_pair(p: &PhysExpr) -> Option<((ColId, DataType), (ColId, DataType))> {
    match p {
        PhysExpr::Binary {
            op: BinaryOp::Eq,
            left,
            right,
            ..
        } => match (left.as_ref(), right.as_ref()) {
            (
                PhysExpr::Column {
                    index: a,
                    data_type: ta,
                },
                PhysExpr::Column {
                    index: b,
                    data_type: tb,
                },
            ) if a != b && ta == tb => Some(((*a, *ta), (*b, *tb))),
            _ => None,
        },
        _ => None,
    }
}

impl Classes {
    /// Splits `preds` into classes (of equalities between plain columns of the
    /// same type in two different inputs) and the predicates left as they are.
    /// `input_of` gives a column's input index. A class with two columns of one
    /// input is not formed: joins would not make those two equal, so its
    /// equalities stay ordinary predicates.
    pub fn extract(
        preds: Vec<PhysExpr>,
        input_of: impl Fn(ColId) -> Option<usize>,
    ) -> (Classes, Vec<PhysExpr>) {
        // Union-find over the columns of candidate equalities.
        let mut cols: Vec<(ColId, DataType, usize)> = Vec::new();
        let mut parent: Vec<usize> = Vec::new();
        let mut candidates: Vec<(usize, PhysExpr)> = Vec::new();
        let mut rest = Vec::new();
        fn find(parent: &mut [usize], mut i: usize) -> usize {
            while parent[i] != i {
                parent[i] = parent[parent[i]];
                i = parent[i];
            }
            i
        }
        for p in preds {
            let pair = column_pair(&p).and_then(|(a, b)| {
                let (ia, ib) = (input_of(a.0)?, input_of(b.0)?);
                (ia != ib).then_some(((a, ia), (b, ib)))
            });
            let Some((a, b)) = pair else {
                rest.push(p);
                continue;
            };
            let mut slot = |(c, t): (ColId, DataType), input: usize| match cols
                .iter()
                .position(|x| x.0 == c)
            {
                Some(i) => i,
                None => {
                    cols.push((c, t, input));
                    parent.push(parent.len());
                    cols.len() - 1
                }
            };
            let (x, y) = (slot(a.0, a.1), slot(b.0, b.1));
            let (rx, ry) = (find(&mut parent, x), find(&mut parent, y));
            parent[rx] = ry;
            candidates.push((x, p));
        }
        let mut roots: Vec<usize> = Vec::new();
        let mut classes: Vec<Vec<Member>> = Vec::new();
        for (i, &(col, data_type, input)) in cols.iter().enumerate() {
            let r = find(&mut parent, i);
            let k = match roots.iter().position(|&x| x == r) {
                Some(k) => k,
                None => {
                    roots.push(r);
                    classes.push(Vec::new());
                    roots.len() - 1
                }
            };
            classes[k].push(Member {
                col,
                data_type,
                input: input as u32,
            });
        }
        let valid: Vec<bool> = classes
            .iter()
            .map(|c| {
                c.iter()
                    .enumerate()
                    .all(|(i, m)| c[..i].iter().all(|o| o.input != m.input))
            })
            .collect();
        for (x, p) in candidates {
            let r = find(&mut parent, x);
            let k = roots
                .iter()
                .position(|&y| y == r)
                .expect("class of a column");
            if !valid[k] {
                rest.push(p);
            }
        }
        let classes = classes
            .into_iter()
            .zip(valid)
            .filter(|(_, v)| *v)
            .map(|(c, _)| c)
            .collect();
        (Classes { classes }, rest)
    }

    /// The equalities joining inputs `a` with inputs `b` (bitmasks): one per
    /// class with members on both sides, between each side's member with the
    /// fewest distinct values (the tightest key for estimates).
    pub fn joining(&self, a: u32, ea: &Estimate, b: u32, eb: &Estimate) -> Vec<PhysExpr> {
        let pick = |mask: u32, est: &Estimate, class: &[Member]| -> Option<Member> {
            class
                .iter()
                .filter(|m| mask & (1 << m.input) != 0)
                .min_by(|x, y| {
                    let nx = est.ndv.get(&x.col).copied().unwrap_or(f64::MAX);
                    let ny = est.ndv.get(&y.col).copied().unwrap_or(f64::MAX);
                    nx.total_cmp(&ny)
                })
                .cloned()
        };
        let column = |m: Member| PhysExpr::Column {
            index: m.col,
            data_type: m.data_type,
        };
        self.classes
            .iter()
            .filter_map(|c| {
                let (l, r) = (pick(a, ea, c)?, pick(b, eb, c)?);
                Some(PhysExpr::Binary {
                    op: BinaryOp::Eq,
                    left: Box::new(column(l)),
                    right: Box::new(column(r)),
                    data_type: DataType::Boolean,
                })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn col(i: ColId) -> PhysExpr {
        PhysExpr::Column {
            index: i,
            data_type: DataType::BigInt,
        }
    }

    fn eq(a: ColId, b: ColId) -> PhysExpr {
        PhysExpr::Binary {
            op: BinaryOp::Eq,
            left: Box::new(col(a)),
            right: Box::new(col(b)),
            data_type: DataType::Boolean,
        }
    }

    fn est(ndv: &[(ColId, f64)]) -> Estimate {
        Estimate {
            rows: 1000.0,
            ndv: ndv.iter().copied().collect(),
            ..Default::default()
        }
    }

    #[test]
    fn transitive_equality_joins_inputs_directly() {
        // Columns 10, 20, 30 in inputs 0, 1, 2: 10 = 20 and 20 = 30.
        let input_of = |c: ColId| Some(c / 10 - 1);
        let (classes, rest) = Classes::extract(vec![eq(10, 20), eq(20, 30)], input_of);
        assert!(rest.is_empty());
        let on = classes.joining(0b001, &est(&[]), 0b100, &est(&[]));
        assert_eq!(on, vec![eq(10, 30)]);
        // Joining {0, 2} with {1}: one equality, not two.
        let on = classes.joining(0b101, &est(&[(10, 5.0), (30, 50.0)]), 0b010, &est(&[]));
        assert_eq!(on, vec![eq(10, 20)]);
    }

    #[test]
    fn two_columns_of_one_input_stay_predicates() {
        // 10 = 20 and 11 = 20: 10 and 11 are both in input 0.
        let input_of = |c: ColId| Some(c / 10 - 1);
        let (classes, rest) = Classes::extract(vec![eq(10, 20), eq(11, 20)], input_of);
        assert_eq!(rest.len(), 2);
        assert!(classes.joining(0b01, &est(&[]), 0b10, &est(&[])).is_empty());
    }

    #[test]
    fn other_predicates_pass_through() {
        let input_of = |c: ColId| Some(c / 10 - 1);
        let same_input = eq(10, 11);
        let (classes, rest) = Classes::extract(vec![same_input.clone(), eq(10, 20)], input_of);
        assert_eq!(rest, vec![same_input]);
        assert_eq!(classes.joining(0b01, &est(&[]), 0b10, &est(&[])).len(), 1);
    }
}
