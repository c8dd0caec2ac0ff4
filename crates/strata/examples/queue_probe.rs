use std::time::Instant;
use strata::*;
fn main() -> Result<()> {
    let n: i64 = std::env::args()
        .nth(1)
        .map(|s| s.parse().unwrap())
        .unwrap_or(200_000);
    let db = Database::open(Options::default())?;
    let t = db.create_table(
        Schema::new("q")
            .column("k", Type::Int)
            .column("v", Type::Int)
            .primary_key(&["k"]),
    )?;
    let mut next = 0i64;
    for _ in 0..1000 {
        let mut x = db.begin()?;
        x.insert(&t, vec![Value::Int(next), Value::Int(0)])?;
        x.commit()?;
        next += 1;
    }
    let mut last = Instant::now();
    for i in 0..n {
        let mut x = db.begin()?;
        x.insert(&t, vec![Value::Int(next), Value::Int(0)])?;
        next += 1;
        let o = x.scan_limit(&t, .., 1)?;
        x.delete(&t, &Key(vec![o[0][0].clone()]))?;
        x.commit()?;
        if (i + 1) % 50_000 == 0 {
            println!(
                "{} pops: {:.0} pops/s",
                i + 1,
                50_000.0 / last.elapsed().as_secs_f64()
            );
            last = Instant::now();
        }
    }

    Ok(())
}
