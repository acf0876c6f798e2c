//! The allocator's arena cap holds in a process that set it before starting
//! threads (kura's own start-up order): more threads than the cap, each
//! allocating while the others hold their blocks, share the capped arenas.

#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn main() {
    if std::env::var_os("MALLOC_ARENA_MAX").is_some() {
        println!("arenas: MALLOC_ARENA_MAX is set, the cap is the user's; skipped");
        return;
    }
    kura_common::allocator::tune();
    let cap = kura_common::allocator::arena_cap();
    let threads = 4 * cap + 4;
    let barrier = std::sync::Arc::new(std::sync::Barrier::new(threads));
    let handles: Vec<_> = (0..threads)
        .map(|_| {
            let barrier = barrier.clone();
            std::thread::spawn(move || {
                let block = vec![7u8; 1 << 20];
                barrier.wait();
                let held = arena_count();
                barrier.wait();
                (block.len(), held)
            })
        })
        .collect();
    let mut most = 0;
    for h in handles {
        let (len, held) = h.join().unwrap();
        assert_eq!(len, 1 << 20);
        most = most.max(held);
    }
    assert!(
        most >= 2,
        "{most} arenas for {threads} threads: the count is not read"
    );
    assert!(
        most <= cap,
        "{most} arenas with {threads} threads, cap {cap}"
    );
    println!("arenas: {threads} threads used {most} arenas, cap {cap}: ok");
}

/// The arenas glibc made, counted in `malloc_info`'s XML (`<heap nr=`).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn arena_count() -> usize {
    let path = std::env::temp_dir().join(format!(
        "kura-malloc-info-{}-{:?}",
        std::process::id(),
        std::thread::current().id()
    ));
    let c_path = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
    // SAFETY: fopen/malloc_info/fclose on a file only this thread uses.
    unsafe {
        let f = libc::fopen(c_path.as_ptr(), c"w".as_ptr());
        assert!(!f.is_null(), "cannot write {}", path.display());
        libc::malloc_info(0, f);
        libc::fclose(f);
    }
    let xml = std::fs::read_to_string(&path).unwrap();
    let _ = std::fs::remove_file(&path);
    xml.matches("<heap nr=").count()
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn main() {
    println!("arenas: glibc only; skipped");
}
