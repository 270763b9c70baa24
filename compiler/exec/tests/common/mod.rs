//! Where these tests run: the CPU, unless `TESSERA_TEST_DEVICE` names
//! `cuda` or `hip`, with buffers in `TESSERA_TEST_MEMORY` (`device`,
//! `managed` or `pinned`; device memory when unset). A machine with a GPU
//! runs the same references there (`scripts/gpu-check.sh`). The programs
//! are read from `TESSERA_REPO` when set (a test binary carried to another
//! machine), else from this checkout.

use std::path::PathBuf;

use tessera_runtime::{Device, DeviceKind, MemoryKind};

/// The GPU `TESSERA_TEST_DEVICE` names, opened with its memory kind; None
/// when it is unset or `cpu`.
pub fn gpu() -> Option<Device> {
    let name = std::env::var("TESSERA_TEST_DEVICE").ok()?;
    let kind =
        DeviceKind::from_name(&name).unwrap_or_else(|| panic!("TESSERA_TEST_DEVICE={name}: expected cpu, cuda or hip"));
    if kind == DeviceKind::Cpu {
        return None;
    }
    let memory = match std::env::var("TESSERA_TEST_MEMORY") {
        Ok(m) => MemoryKind::from_name(&m)
            .unwrap_or_else(|| panic!("TESSERA_TEST_MEMORY={m}: expected device, managed or pinned")),
        Err(_) => MemoryKind::Device,
    };
    let device = Device::open(kind).and_then(|d| d.with_memory(memory));
    Some(device.unwrap_or_else(|e| panic!("TESSERA_TEST_DEVICE={name}: {e}")))
}

/// The device the tests run on: [`gpu`], or the CPU.
pub fn device() -> Device {
    gpu().unwrap_or_else(|| Device::open(DeviceKind::Cpu).expect("the CPU device opens"))
}

/// `program`, written as `NAME.tsr` in a temporary directory, built for
/// `device` at LLVM's `opt_level` and loaded.
pub fn load_program(device: &Device, name: &str, program: &str, opt_level: u8) -> tessera_exec::Loaded {
    let dir = std::env::temp_dir().join(format!("tessera-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("{name}.tsr"));
    std::fs::write(&path, program).unwrap();
    let mut sources = tessera_driver::load(&[path.to_string_lossy().into_owned()]).unwrap();
    let built = tessera_exec::build(&mut sources, tessera_exec::target_for(device)).unwrap_or_else(|d| panic!("{d:?}"));
    let image = tessera_exec::image(device, &built.layers, opt_level).unwrap_or_else(|d| panic!("{d:?}"));
    tessera_exec::Loaded::new(device, image).unwrap()
}

/// The repository's root.
pub fn repo() -> PathBuf {
    match std::env::var_os("TESSERA_REPO") {
        Some(root) => PathBuf::from(root),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../.."),
    }
}
