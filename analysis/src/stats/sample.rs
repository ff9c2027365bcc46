//! Clustered samples: outcomes grouped by layout, validated once at construction.

use std::collections::BTreeMap;

use super::StatsError;

/// Outcomes grouped into clusters (one cluster per layout).
///
/// Invariants, checked by every constructor: at least one cluster, no empty cluster, every
/// outcome finite. Episodes on the same layout are correlated, so every cluster method here
/// treats a cluster as the unit of resampling.
#[derive(Debug, Clone, PartialEq)]
pub struct ClusteredSample {
    clusters: Vec<Vec<f64>>,
}

impl ClusteredSample {
    /// Builds a sample from clusters given in a fixed order (the order fixes which cluster a
    /// resample index refers to, hence the bootstrap draws for a seed).
    pub fn new(clusters: Vec<Vec<f64>>) -> Result<Self, StatsError> {
        validate(&clusters, |&x| [x])?;
        Ok(Self { clusters })
    }

    /// Builds a sample of binary outcomes (true = 1, false = 0).
    pub fn from_binary(clusters: Vec<Vec<bool>>) -> Result<Self, StatsError> {
        Self::new(
            clusters
                .into_iter()
                .map(|c| c.into_iter().map(f64::from).collect())
                .collect(),
        )
    }

    /// Groups `(cluster id, outcome)` rows by id. Clusters are ordered by id, so the result
    /// (and any seeded bootstrap on it) does not depend on the order rows arrive in.
    pub fn from_observations<K: Ord>(
        rows: impl IntoIterator<Item = (K, f64)>,
    ) -> Result<Self, StatsError> {
        let mut groups: BTreeMap<K, Vec<f64>> = BTreeMap::new();
        for (k, x) in rows {
            groups.entry(k).or_default().push(x);
        }
        Self::new(groups.into_values().collect())
    }

    /// Number of observations.
    pub fn n(&self) -> usize {
        self.clusters.iter().map(Vec::len).sum()
    }

    /// Number of clusters.
    pub fn num_clusters(&self) -> usize {
        self.clusters.len()
    }

    /// The clusters, in resampling order.
    pub fn clusters(&self) -> &[Vec<f64>] {
        &self.clusters
    }

    /// The pooled mean over all observations.
    pub fn mean(&self) -> f64 {
        let (sums, counts) = self.totals();
        sums.iter().sum::<f64>() / counts.iter().sum::<f64>()
    }

    /// Per-cluster `(sum, count)`: the sufficient statistics of a pooled mean, which make
    /// one bootstrap resample O(clusters) instead of O(observations).
    pub(crate) fn totals(&self) -> (Vec<f64>, Vec<f64>) {
        let sums = self.clusters.iter().map(|c| c.iter().sum()).collect();
        let counts = self.clusters.iter().map(|c| c.len() as f64).collect();
        (sums, counts)
    }
}

/// Two policies' outcomes on the same observations: pair `(a, b)` is the same task episode
/// (same layout, same fault) run under policy A and policy B.
///
/// Same invariants as [`ClusteredSample`]. Keeping the pairs together is what lets a paired
/// comparison resample both policies with the very same clusters.
#[derive(Debug, Clone, PartialEq)]
pub struct PairedSample {
    clusters: Vec<Vec<(f64, f64)>>,
}

impl PairedSample {
    /// Builds a paired sample from clusters of `(a, b)` pairs in a fixed order.
    pub fn new(clusters: Vec<Vec<(f64, f64)>>) -> Result<Self, StatsError> {
        validate(&clusters, |&(a, b)| [a, b])?;
        Ok(Self { clusters })
    }

    /// Builds a paired sample of binary outcomes.
    pub fn from_binary(clusters: Vec<Vec<(bool, bool)>>) -> Result<Self, StatsError> {
        Self::new(
            clusters
                .into_iter()
                .map(|c| {
                    c.into_iter()
                        .map(|(a, b)| (f64::from(a), f64::from(b)))
                        .collect()
                })
                .collect(),
        )
    }

    /// Groups `(cluster id, a, b)` rows by id; clusters are ordered by id.
    pub fn from_observations<K: Ord>(
        rows: impl IntoIterator<Item = (K, f64, f64)>,
    ) -> Result<Self, StatsError> {
        let mut groups: BTreeMap<K, Vec<(f64, f64)>> = BTreeMap::new();
        for (k, a, b) in rows {
            groups.entry(k).or_default().push((a, b));
        }
        Self::new(groups.into_values().collect())
    }

    /// Zips two samples observation by observation. They must have the same cluster layout
    /// (same number of clusters, same sizes), i.e. come from the same episodes in the same
    /// order.
    pub fn from_aligned(a: &ClusteredSample, b: &ClusteredSample) -> Result<Self, StatsError> {
        if a.num_clusters() != b.num_clusters() {
            return Err(StatsError::Misaligned(format!(
                "{} clusters vs {}",
                a.num_clusters(),
                b.num_clusters()
            )));
        }
        let mut clusters = Vec::with_capacity(a.num_clusters());
        for (i, (ca, cb)) in a.clusters().iter().zip(b.clusters()).enumerate() {
            if ca.len() != cb.len() {
                return Err(StatsError::Misaligned(format!(
                    "cluster {i} has {} observations vs {}",
                    ca.len(),
                    cb.len()
                )));
            }
            clusters.push(ca.iter().copied().zip(cb.iter().copied()).collect());
        }
        Self::new(clusters)
    }

    /// Number of pairs.
    pub fn n(&self) -> usize {
        self.clusters.iter().map(Vec::len).sum()
    }

    /// Number of clusters.
    pub fn num_clusters(&self) -> usize {
        self.clusters.len()
    }

    /// The clusters of pairs, in resampling order.
    pub fn clusters(&self) -> &[Vec<(f64, f64)>] {
        &self.clusters
    }

    /// Policy A's outcomes alone, with the same cluster layout.
    pub fn policy_a(&self) -> ClusteredSample {
        self.project(|&(a, _)| a)
    }

    /// Policy B's outcomes alone, with the same cluster layout.
    pub fn policy_b(&self) -> ClusteredSample {
        self.project(|&(_, b)| b)
    }

    fn project(&self, f: impl Fn(&(f64, f64)) -> f64) -> ClusteredSample {
        // The invariants carry over: same non-empty clusters, finite values.
        ClusteredSample {
            clusters: self
                .clusters
                .iter()
                .map(|c| c.iter().map(&f).collect())
                .collect(),
        }
    }
}

fn validate<T, const K: usize>(
    clusters: &[Vec<T>],
    values: impl Fn(&T) -> [f64; K],
) -> Result<(), StatsError> {
    if clusters.is_empty() {
        return Err(StatsError::EmptySample);
    }
    for (ci, cluster) in clusters.iter().enumerate() {
        if cluster.is_empty() {
            return Err(StatsError::EmptyCluster { index: ci });
        }
        for (i, obs) in cluster.iter().enumerate() {
            if let Some(&value) = values(obs).iter().find(|v| !v.is_finite()) {
                return Err(StatsError::NonFinite {
                    cluster: ci,
                    index: i,
                    value,
                });
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejects_empty_sample_empty_cluster_and_non_finite() {
        assert_eq!(ClusteredSample::new(vec![]), Err(StatsError::EmptySample));
        assert_eq!(
            ClusteredSample::new(vec![vec![1.0], vec![]]),
            Err(StatsError::EmptyCluster { index: 1 })
        );
        assert!(matches!(
            ClusteredSample::new(vec![vec![1.0], vec![0.0, f64::NAN]]),
            Err(StatsError::NonFinite {
                cluster: 1,
                index: 1,
                ..
            })
        ));
        assert!(matches!(
            PairedSample::new(vec![vec![(0.0, f64::INFINITY)]]),
            Err(StatsError::NonFinite {
                cluster: 0,
                index: 0,
                ..
            })
        ));
        assert_eq!(
            ClusteredSample::from_observations(Vec::<(u32, f64)>::new()),
            Err(StatsError::EmptySample)
        );
    }

    #[test]
    fn from_observations_groups_by_id_independent_of_row_order() {
        let rows = vec![("b", 1.0), ("a", 0.0), ("b", 0.0), ("a", 1.0), ("c", 1.0)];
        let s = ClusteredSample::from_observations(rows.clone()).unwrap();
        let mut reversed = rows;
        reversed.reverse();
        let r = ClusteredSample::from_observations(reversed).unwrap();
        assert_eq!(s.num_clusters(), 3);
        assert_eq!(s.n(), 5);
        assert_eq!(s.clusters()[0], vec![0.0, 1.0]); // "a" first
        assert_eq!(s.clusters()[2], vec![1.0]); // "c" last
        assert_eq!(s.totals(), r.totals());
        assert!((s.mean() - 0.6).abs() < 1e-15);
    }

    #[test]
    fn paired_from_aligned_checks_layout_and_projects_back() {
        let a = ClusteredSample::from_binary(vec![vec![true, false], vec![true]]).unwrap();
        let b = ClusteredSample::from_binary(vec![vec![false, false], vec![true]]).unwrap();
        let p = PairedSample::from_aligned(&a, &b).unwrap();
        assert_eq!(p.n(), 3);
        assert_eq!(p.policy_a(), a);
        assert_eq!(p.policy_b(), b);
        let short = ClusteredSample::from_binary(vec![vec![true], vec![true]]).unwrap();
        assert!(matches!(
            PairedSample::from_aligned(&a, &short),
            Err(StatsError::Misaligned(_))
        ));
        let fewer = ClusteredSample::from_binary(vec![vec![true, true, true]]).unwrap();
        assert!(matches!(
            PairedSample::from_aligned(&a, &fewer),
            Err(StatsError::Misaligned(_))
        ));
    }
}
