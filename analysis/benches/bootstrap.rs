//! Cluster bootstrap at report scale: 10,000 resamples over 720 binary outcomes in 20
//! layouts (the size of one policy x fault cell), so a full report stays interactive.

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion};
use faultline_analysis::stats::{
    cluster_bootstrap, paired_difference, BootstrapConfig, ClusteredSample, PairedSample,
};

/// 20 clusters x 36 episodes; `(i * 25) % 36` permutes 0..36, so cluster c has
/// min(7 + 5c/3, 36) successes for A. B fails on every fifth episode A solved.
fn pairs() -> Vec<Vec<(bool, bool)>> {
    (0..20)
        .map(|c| {
            (0..36)
                .map(|i| {
                    let a = (i * 25) % 36 < 7 + c * 5 / 3;
                    (a, a && i % 5 != 0)
                })
                .collect()
        })
        .collect()
}

fn bench(c: &mut Criterion) {
    let pairs = pairs();
    let a: Vec<Vec<bool>> = pairs
        .iter()
        .map(|cl| cl.iter().map(|p| p.0).collect())
        .collect();
    let sample = ClusteredSample::from_binary(a).expect("valid sample");
    let paired = PairedSample::from_binary(pairs).expect("valid paired sample");
    let config = BootstrapConfig::default();
    assert_eq!(
        (sample.n(), sample.num_clusters(), config.resamples),
        (720, 20, 10_000)
    );

    c.bench_function(
        "cluster_bootstrap 10k resamples, 720 obs / 20 clusters (percentile + BCa)",
        |b| b.iter(|| cluster_bootstrap(black_box(&sample), black_box(&config))),
    );
    c.bench_function(
        "paired_difference 10k resamples, 720 pairs / 20 clusters",
        |b| b.iter(|| paired_difference(black_box(&paired), black_box(&config))),
    );
}

criterion_group!(benches, bench);
criterion_main!(benches);
