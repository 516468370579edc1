"""What the chapter 12 tools read from the GPU, behind one interface with two backends.

  Nvml     the real device: ctypes bindings to libnvidia-ml.so.1 (the driver's NVML) and to the
           CUDA runtime (libcudart, for its version), plus cuobjdump for the lab's fatbins.
           Standard library only: no pynvml wheel.
  Fake     a recorded answer: a JSON fixture (fixtures/*.json) of the same shape, so the doctor,
           the exporter, the throttle watch and the go-live runner are tested without a GPU.

Both give `snapshot()` (everything the doctor judges, one dict) and `sample(i)` (the fields the
exporter and the throttle watch read many times a second). Only reads: nothing here changes a
clock, a power limit, the persistence mode or MIG.

Errors: NvmlError (with NVML's own message) for a failing call; a query the GPU does not support
(NVML_ERROR_NOT_SUPPORTED) gives None, which the callers report as "not supported".
"""
from __future__ import annotations

import ctypes
import json
import os
import re
import shutil
import subprocess
import time
from pathlib import Path

FIXTURES = Path(__file__).resolve().parent / "fixtures"

# Clock-event reasons: the bits of nvmlDeviceGetCurrentClocksEventReasons (nvml.h; the same values
# as the older "throttle reasons"). One owner: every tool of the chapter names bits from here.
CLOCK_EVENT_REASONS = [
    (0x1, "GpuIdle"),
    (0x2, "ApplicationsClocksSetting"),
    (0x4, "SwPowerCap"),
    (0x8, "HwSlowdown"),
    (0x10, "SyncBoost"),
    (0x20, "SwThermalSlowdown"),
    (0x40, "HwThermalSlowdown"),
    (0x80, "HwPowerBrakeSlowdown"),
    (0x100, "DisplayClockSetting"),
]
# Bits that mean the clock is held below what the load asks for (idle, sync boost and the display
# clock setting do not).
SLOWDOWN_BITS = 0x2 | 0x4 | 0x8 | 0x20 | 0x40 | 0x80


def reason_names(mask: int) -> list[str]:
    """Every set bit by name; an unknown bit as its hex value (a newer driver's reason)."""
    names = [n for bit, n in CLOCK_EVENT_REASONS if mask & bit]
    known = sum(bit for bit, _ in CLOCK_EVENT_REASONS)
    rest = mask & ~known
    if rest:
        names.append(f"0x{rest:x}")
    return names


class NvmlError(RuntimeError):
    """An NVML call failed: the call's name and NVML's message."""


class FixtureError(ValueError):
    """A fixture file that cannot be read as a recorded device answer."""


# ---- the fake backend ----------------------------------------------------------------------------

class Fake:
    """A recorded device answer (fixtures/NAME.json, or any path). `samples` (optional, a list of
    partial device dicts) are what successive sample() calls return, cycling, so that metrics move."""

    def __init__(self, fixture: str | os.PathLike):
        p = Path(fixture)
        if not p.exists() and (FIXTURES / f"{fixture}.json").exists():
            p = FIXTURES / f"{fixture}.json"
        self.data = _load_fixture(p, fixture)
        if "nvml_error" in self.data:  # a recorded failure of NVML itself (driver not loaded, ...)
            raise NvmlError(self.data["nvml_error"])
        if not isinstance(self.data.get("devices"), list) or not self.data["devices"]:
            raise FixtureError(f"fixture {p}: needs a non-empty 'devices' list")
        self.path = p
        self._calls = [0] * len(self.data["devices"])

    def device_count(self) -> int:
        return len(self.data["devices"])

    def snapshot(self) -> dict:
        snap = json.loads(json.dumps(self.data))
        snap["source"] = f"fake:{self.path.name}"
        return snap

    def describe(self, i: int) -> dict:
        """name, uuid, pci_bus_id of device i (the exporter's labels)."""
        d = self.data["devices"][i]
        return {k: d.get(k) for k in ("name", "uuid", "pci_bus_id")}

    def sample(self, i: int) -> dict:
        if not 0 <= i < self.device_count():
            raise NvmlError(f"device index {i}: the fixture has {self.device_count()} device(s)")
        d = json.loads(json.dumps(self.data["devices"][i]))
        samples = d.pop("samples", None)
        if samples:
            k = self._calls[i] % len(samples)
            _merge(d, samples[k])
        self._calls[i] += 1
        d["timestamp"] = time.time()
        return d

    def fast_sample(self, i: int) -> dict:
        return _fast(self.sample(i))

    def close(self) -> None:
        pass


def _fast(d: dict) -> dict:
    """The throttle watch's fields of a sample."""
    g = lambda *p: _dig(d, *p)  # noqa: E731
    return {"sm": g("clocks", "sm"), "mem": g("clocks", "mem"), "power_w": g("power", "usage_w"),
            "temp_c": g("temperature", "gpu"), "reasons": d.get("clock_event_reasons"),
            "util": g("utilization", "gpu")}


def _dig(d, *path):
    for k in path:
        if not isinstance(d, dict):
            return None
        d = d.get(k)
    return d


def _load_fixture(p: Path, name) -> dict:
    """A fixture's JSON. One that names a "base" fixture is that fixture with this one's top-level
    keys and its "device_overrides" (merged into devices[i], key by key) laid over it: a failure
    fixture states only what differs from the healthy machine. An overridden device keeps no
    "samples" of the base unless the override gives its own (a failure state is its own timeline)."""
    try:
        data = json.loads(p.read_text())
    except FileNotFoundError:
        raise FixtureError(f"fixture {name}: no such file (fixtures: "
                           f"{', '.join(sorted(f.stem for f in FIXTURES.glob('*.json')))})") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise FixtureError(f"fixture {p}: not JSON ({e})") from None
    if not isinstance(data, dict):
        raise FixtureError(f"fixture {p}: not a JSON object")
    base = data.pop("base", None)
    if base is not None:
        bp = FIXTURES / f"{base}.json"
        if bp.resolve() == p.resolve():
            raise FixtureError(f"fixture {p}: names itself as its base")
        merged = _load_fixture(bp, base)
        overrides = data.pop("device_overrides", [])
        merged.update(data)
        for i, over in enumerate(overrides):
            if i >= len(merged.get("devices", [])):
                raise FixtureError(f"fixture {p}: device_overrides[{i}] but the base has "
                                   f"{len(merged.get('devices', []))} device(s)")
            _merge(merged["devices"][i], over)
            if "samples" not in over:  # the base's timeline belongs to the base's state
                merged["devices"][i].pop("samples", None)
        data = merged
    return data


def _merge(base: dict, over: dict) -> None:
    for k, v in over.items():
        if isinstance(v, dict) and isinstance(base.get(k), dict):
            _merge(base[k], v)
        else:
            base[k] = v


# ---- the real backend ----------------------------------------------------------------------------

NVML_SUCCESS = 0
NVML_ERROR_INVALID_ARGUMENT = 2
NVML_ERROR_NOT_SUPPORTED = 3
NVML_ERROR_NO_PERMISSION = 4
NVML_ERROR_NOT_FOUND = 6
NVML_ERROR_FUNCTION_NOT_FOUND = 13
# What an optional query may answer on a GPU or a driver that lacks it (an invalid argument: a link
# or threshold index this GPU does not have; no permission: a query reserved to root). Anything
# else (GPU lost, unknown error) raises.
_OPTIONAL = (NVML_ERROR_INVALID_ARGUMENT, NVML_ERROR_NOT_SUPPORTED, NVML_ERROR_NO_PERMISSION,
             NVML_ERROR_NOT_FOUND, NVML_ERROR_FUNCTION_NOT_FOUND)

NVML_CLOCK_SM, NVML_CLOCK_MEM = 1, 2
NVML_TEMPERATURE_GPU = 0
NVML_TEMPERATURE_THRESHOLD_SHUTDOWN, NVML_TEMPERATURE_THRESHOLD_SLOWDOWN = 0, 1
NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_MEMORY_ERROR_TYPE_UNCORRECTED = 0, 1
NVML_VOLATILE_ECC, NVML_AGGREGATE_ECC = 0, 1
NVML_PCIE_UTIL_TX_BYTES, NVML_PCIE_UTIL_RX_BYTES = 0, 1
NVML_NVLINK_MAX_LINKS = 18
NVML_EVENT_TYPE_XID_CRITICAL_ERROR = 0x8
# nvmlPerfPolicyType_t: the cumulative time the clocks were held down, per cause (ns).
PERF_POLICIES = {"power": 0, "thermal": 1, "sync_boost": 2, "board_limit": 3, "low_util": 4,
                 "reliability": 5}


class _Memory(ctypes.Structure):
    _fields_ = [("total", ctypes.c_ulonglong), ("free", ctypes.c_ulonglong), ("used", ctypes.c_ulonglong)]


class _Utilization(ctypes.Structure):
    _fields_ = [("gpu", ctypes.c_uint), ("memory", ctypes.c_uint)]


class _Violation(ctypes.Structure):
    _fields_ = [("referenceTime", ctypes.c_ulonglong), ("violationTime", ctypes.c_ulonglong)]


class _Attributes(ctypes.Structure):  # nvmlDeviceAttributes_t
    _fields_ = [("multiprocessorCount", ctypes.c_uint), ("sharedCopyEngineCount", ctypes.c_uint),
                ("sharedDecoderCount", ctypes.c_uint), ("sharedEncoderCount", ctypes.c_uint),
                ("sharedJpegCount", ctypes.c_uint), ("sharedOfaCount", ctypes.c_uint),
                ("gpuInstanceSliceCount", ctypes.c_uint), ("computeInstanceSliceCount", ctypes.c_uint),
                ("memorySizeMB", ctypes.c_ulonglong)]


class _EventData(ctypes.Structure):  # nvmlEventData_t
    _fields_ = [("device", ctypes.c_void_p), ("eventType", ctypes.c_ulonglong),
                ("eventData", ctypes.c_ulonglong), ("gpuInstanceId", ctypes.c_uint),
                ("computeInstanceId", ctypes.c_uint)]


class Nvml:
    """The driver's NVML through ctypes. Raises NvmlError when the library is missing or init fails."""

    def __init__(self, lib: str = "libnvidia-ml.so.1"):
        try:
            self.lib = ctypes.CDLL(lib)
        except OSError as e:
            raise NvmlError(f"cannot load {lib} ({e}): no NVIDIA driver on this machine") from None
        self.lib.nvmlErrorString.restype = ctypes.c_char_p
        self._call("nvmlInit_v2")
        self._handles: dict[int, ctypes.c_void_p] = {}
        self._xid: dict[int, int] = {}
        self._events = None

    # -- plumbing
    def _call(self, fn: str, *args, optional: bool = False) -> bool:
        f = getattr(self.lib, fn, None)
        if f is None:
            if optional:
                return False
            raise NvmlError(f"{fn}: not in this NVML (driver too old?)")
        rc = f(*args)
        if rc == NVML_SUCCESS:
            return True
        if optional and rc in _OPTIONAL:
            return False
        msg = self.lib.nvmlErrorString(rc)
        raise NvmlError(f"{fn}: {msg.decode() if msg else rc} (NVML error {rc})")

    def _h(self, i: int):
        if i not in self._handles:
            h = ctypes.c_void_p()
            self._call("nvmlDeviceGetHandleByIndex_v2", ctypes.c_uint(i), ctypes.byref(h))
            self._handles[i] = h
        return self._handles[i]

    def _uint(self, fn: str, h, *pre) -> int | None:
        v = ctypes.c_uint()
        return v.value if self._call(fn, h, *pre, ctypes.byref(v), optional=True) else None

    def _str(self, fn: str, *pre, size: int = 96) -> str | None:
        buf = ctypes.create_string_buffer(size)
        return buf.value.decode() if self._call(fn, *pre, buf, ctypes.c_uint(size), optional=True) else None

    def close(self) -> None:
        if self._events is not None:
            self._call("nvmlEventSetFree", self._events, optional=True)
        self._call("nvmlShutdown", optional=True)

    # -- the interface
    def device_count(self) -> int:
        n = ctypes.c_uint()
        self._call("nvmlDeviceGetCount_v2", ctypes.byref(n))
        return n.value

    def describe(self, i: int) -> dict:
        h = self._h(i)
        return {"name": self._str("nvmlDeviceGetName", h), "uuid": self._str("nvmlDeviceGetUUID", h),
                "pci_bus_id": self._pci(h)[0]}

    def reasons(self, h) -> int | None:
        v = ctypes.c_ulonglong()
        for fn in ("nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetCurrentClocksThrottleReasons"):
            if getattr(self.lib, fn, None) is not None:
                return v.value if self._call(fn, h, ctypes.byref(v), optional=True) else None
        return None

    def sample(self, i: int) -> dict:
        h = self._h(i)
        mem = _Memory()
        self._call("nvmlDeviceGetMemoryInfo", h, ctypes.byref(mem))
        util = _Utilization()
        have_util = self._call("nvmlDeviceGetUtilizationRates", h, ctypes.byref(util), optional=True)
        mw = self._uint("nvmlDeviceGetPowerUsage", h)
        energy = ctypes.c_ulonglong()
        have_energy = self._call("nvmlDeviceGetTotalEnergyConsumption", h, ctypes.byref(energy), optional=True)
        pcie = {}
        for key, counter in (("tx_kbps", NVML_PCIE_UTIL_TX_BYTES), ("rx_kbps", NVML_PCIE_UTIL_RX_BYTES)):
            pcie[key] = self._uint("nvmlDeviceGetPcieThroughput", h, ctypes.c_int(counter))
        pcie["replay"] = self._uint("nvmlDeviceGetPcieReplayCounter", h)
        violations = {}
        for name, pol in PERF_POLICIES.items():
            v = _Violation()
            violations[name] = v.violationTime if self._call(
                "nvmlDeviceGetViolationStatus", h, ctypes.c_int(pol), ctypes.byref(v), optional=True) else None
        return {
            "index": i,
            "timestamp": time.time(),
            "memory": {"total": mem.total, "used": mem.used, "free": mem.free},
            "utilization": {"gpu": util.gpu, "memory": util.memory} if have_util else None,
            "clocks": {"sm": self._uint("nvmlDeviceGetClockInfo", h, ctypes.c_int(NVML_CLOCK_SM)),
                       "mem": self._uint("nvmlDeviceGetClockInfo", h, ctypes.c_int(NVML_CLOCK_MEM))},
            "power": {"usage_w": None if mw is None else mw / 1000.0},
            "temperature": {"gpu": self._uint("nvmlDeviceGetTemperature", h, ctypes.c_int(NVML_TEMPERATURE_GPU))},
            "clock_event_reasons": self.reasons(h),
            "energy_mj": energy.value if have_energy else None,
            "pcie": pcie,
            "violations_ns": violations,
            "ecc": {"volatile": self._ecc(h, NVML_VOLATILE_ECC)},
            "remapped_rows": self._remapped(h),
            "xid_last": self._poll_xid(i),
        }

    def fast_sample(self, i: int) -> dict:
        """Clocks, power, temperature, reasons, utilization only: few calls, for >= 10 Hz."""
        h = self._h(i)
        mw = self._uint("nvmlDeviceGetPowerUsage", h)
        util = _Utilization()
        have_util = self._call("nvmlDeviceGetUtilizationRates", h, ctypes.byref(util), optional=True)
        return {"sm": self._uint("nvmlDeviceGetClockInfo", h, ctypes.c_int(NVML_CLOCK_SM)),
                "mem": self._uint("nvmlDeviceGetClockInfo", h, ctypes.c_int(NVML_CLOCK_MEM)),
                "power_w": None if mw is None else mw / 1000.0,
                "temp_c": self._uint("nvmlDeviceGetTemperature", h, ctypes.c_int(NVML_TEMPERATURE_GPU)),
                "reasons": self.reasons(h), "util": util.gpu if have_util else None}

    def _ecc(self, h, counter: int) -> dict | None:
        out = {}
        for key, typ in (("corrected", NVML_MEMORY_ERROR_TYPE_CORRECTED),
                         ("uncorrected", NVML_MEMORY_ERROR_TYPE_UNCORRECTED)):
            v = ctypes.c_ulonglong()
            if not self._call("nvmlDeviceGetTotalEccErrors", h, ctypes.c_int(typ), ctypes.c_int(counter),
                              ctypes.byref(v), optional=True):
                return None
            out[key] = v.value
        return out

    def _remapped(self, h) -> dict | None:
        c, u, p, f = ctypes.c_uint(), ctypes.c_uint(), ctypes.c_uint(), ctypes.c_uint()
        if not self._call("nvmlDeviceGetRemappedRows", h, ctypes.byref(c), ctypes.byref(u), ctypes.byref(p),
                          ctypes.byref(f), optional=True):
            return None
        return {"correctable": c.value, "uncorrectable": u.value, "pending": bool(p.value),
                "failure": bool(f.value)}

    def _poll_xid(self, i: int) -> int:
        """The last critical Xid seen since this process started (dcgm-exporter's XID_ERRORS is the
        last one too): events registered once, drained without waiting at each sample."""
        if self._events is None:
            es = ctypes.c_void_p()
            if self._call("nvmlEventSetCreate", ctypes.byref(es), optional=True):
                self._events = es
                for j in range(self.device_count()):
                    self._call("nvmlDeviceRegisterEvents", self._h(j),
                               ctypes.c_ulonglong(NVML_EVENT_TYPE_XID_CRITICAL_ERROR), es, optional=True)
            else:
                self._events = False
        if self._events:
            data = _EventData()
            while True:
                try:
                    if not self._call("nvmlEventSetWait_v2", self._events, ctypes.byref(data),
                                      ctypes.c_uint(0), optional=True):
                        break
                except NvmlError:  # NVML_ERROR_TIMEOUT: nothing pending
                    break
                for j, hj in self._handles.items():
                    if hj.value == data.device:
                        self._xid[j] = int(data.eventData)
        return self._xid.get(i, 0)

    def snapshot(self, build_dir: Path | None = None, binaries: list[Path] | None = None) -> dict:
        snap = {"source": "nvml",
                "driver_version": self._str("nvmlSystemGetDriverVersion"),
                "nvml_version": self._str("nvmlSystemGetNVMLVersion"),
                "cuda_driver_version": None,
                "runtime_version": cuda_runtime_version(),
                "toolkit_version": toolkit_version(build_dir),
                "binaries": fatbin_archs(binaries if binaries is not None else lab_binaries(build_dir)),
                "devices": []}
        v = ctypes.c_int()
        if self._call("nvmlSystemGetCudaDriverVersion_v2", ctypes.byref(v), optional=True):
            snap["cuda_driver_version"] = v.value
        for i in range(self.device_count()):
            snap["devices"].append(self._device(i))
        return snap

    def _device(self, i: int) -> dict:
        h = self._h(i)
        d = self.sample(i)
        d.pop("timestamp", None)
        d["name"] = self._str("nvmlDeviceGetName", h)
        d["uuid"] = self._str("nvmlDeviceGetUUID", h)
        maj, mnr = ctypes.c_int(), ctypes.c_int()
        d["compute_capability"] = [maj.value, mnr.value] if self._call(
            "nvmlDeviceGetCudaComputeCapability", h, ctypes.byref(maj), ctypes.byref(mnr), optional=True) else None
        d["pci_bus_id"], d["pci_device_id"] = self._pci(h)
        cur, pend = ctypes.c_uint(), ctypes.c_uint()
        ecc_mode = self._call("nvmlDeviceGetEccMode", h, ctypes.byref(cur), ctypes.byref(pend), optional=True)
        d["ecc"] = {"current": bool(cur.value), "pending": bool(pend.value),
                    "volatile": self._ecc(h, NVML_VOLATILE_ECC),
                    "aggregate": self._ecc(h, NVML_AGGREGATE_ECC)} if ecc_mode else None
        d["retired_pages"] = self._retired(h)
        pm = self._uint("nvmlDeviceGetPersistenceMode", h)
        d["persistence_mode"] = None if pm is None else bool(pm)
        d["clocks"]["sm_max"] = self._uint("nvmlDeviceGetMaxClockInfo", h, ctypes.c_int(NVML_CLOCK_SM))
        d["clocks"]["mem_max"] = self._uint("nvmlDeviceGetMaxClockInfo", h, ctypes.c_int(NVML_CLOCK_MEM))
        for key, fn in (("limit_w", "nvmlDeviceGetEnforcedPowerLimit"),
                        ("default_limit_w", "nvmlDeviceGetPowerManagementDefaultLimit")):
            mw = self._uint(fn, h)
            d["power"][key] = None if mw is None else mw / 1000.0
        for key, t in (("slowdown", NVML_TEMPERATURE_THRESHOLD_SLOWDOWN),
                       ("shutdown", NVML_TEMPERATURE_THRESHOLD_SHUTDOWN)):
            d["temperature"][key] = self._uint("nvmlDeviceGetTemperatureThreshold", h, ctypes.c_int(t))
        d["mig"] = self._mig(h)
        d["pcie"].update({
            "gen": self._uint("nvmlDeviceGetCurrPcieLinkGeneration", h),
            "gen_max": self._uint("nvmlDeviceGetMaxPcieLinkGeneration", h),
            "width": self._uint("nvmlDeviceGetCurrPcieLinkWidth", h),
            "width_max": self._uint("nvmlDeviceGetMaxPcieLinkWidth", h)})
        links = active = 0
        for link in range(NVML_NVLINK_MAX_LINKS):
            st = self._uint("nvmlDeviceGetNvLinkState", h, ctypes.c_uint(link))
            if st is None:
                continue
            links += 1
            active += bool(st)
        d["nvlink"] = {"links": links, "active": active}
        return d

    def _pci(self, h) -> tuple[str | None, str | None]:
        class _Pci(ctypes.Structure):  # nvmlPciInfo_t (v3 layout)
            _fields_ = [("busIdLegacy", ctypes.c_char * 16), ("domain", ctypes.c_uint), ("bus", ctypes.c_uint),
                        ("device", ctypes.c_uint), ("pciDeviceId", ctypes.c_uint),
                        ("pciSubSystemId", ctypes.c_uint), ("busId", ctypes.c_char * 32)]
        p = _Pci()
        if not self._call("nvmlDeviceGetPciInfo_v3", h, ctypes.byref(p), optional=True):
            return None, None
        return p.busId.decode(), f"0x{p.pciDeviceId:08X}"

    def _retired(self, h) -> dict | None:
        out = {}
        for key, cause in (("sbe", 0), ("dbe", 1)):
            n = ctypes.c_uint(0)
            f = getattr(self.lib, "nvmlDeviceGetRetiredPages", None)
            # A size query (count 0, no buffer): NVML_ERROR_INSUFFICIENT_SIZE (7) still sets the count.
            rc = f(h, ctypes.c_int(cause), ctypes.byref(n), None) if f is not None else NVML_ERROR_NOT_SUPPORTED
            if rc not in (NVML_SUCCESS, 7):
                return None
            out[key] = n.value
        st = ctypes.c_int()
        out["pending"] = bool(st.value) if self._call("nvmlDeviceGetRetiredPagesPendingStatus", h,
                                                      ctypes.byref(st), optional=True) else False
        return out

    def _mig(self, h) -> dict | None:
        cur, pend = ctypes.c_uint(), ctypes.c_uint()
        if not self._call("nvmlDeviceGetMigMode", h, ctypes.byref(cur), ctypes.byref(pend), optional=True):
            return None
        mig = {"current": bool(cur.value), "pending": bool(pend.value), "instances": []}
        if not cur.value:
            return mig
        n = self._uint("nvmlDeviceGetMaxMigDeviceCount", h) or 0
        for k in range(n):
            mh = ctypes.c_void_p()
            if not self._call("nvmlDeviceGetMigDeviceHandleByIndex", h, ctypes.c_uint(k), ctypes.byref(mh),
                              optional=True):
                continue
            a = _Attributes()
            ok = self._call("nvmlDeviceGetAttributes_v2", mh, ctypes.byref(a), optional=True)
            mem = _Memory()
            self._call("nvmlDeviceGetMemoryInfo", mh, ctypes.byref(mem), optional=True)
            mig["instances"].append({
                "index": k, "uuid": self._str("nvmlDeviceGetUUID", mh),
                "sm_count": a.multiprocessorCount if ok else None,
                "copy_engines": a.sharedCopyEngineCount if ok else None,
                "gi_slices": a.gpuInstanceSliceCount if ok else None,
                "memory_total": mem.total})
        return mig


def open_backend(fake: str | None = None):
    """The fake backend for a fixture, else the real NVML (NvmlError when there is none)."""
    return Fake(fake) if fake else Nvml()


# ---- versions and fatbins (no NVML) --------------------------------------------------------------

def cuda_runtime_version() -> int | None:
    """cudaRuntimeGetVersion of the libcudart the lab links (e.g. 13000), None when none loads."""
    names = ["libcudart.so"] + [f"libcudart.so.{m}" for m in (13, 12, 11)]
    roots = [os.environ.get("CUDA_HOME", ""), "/usr/local/cuda"]
    cands = [str(Path(r) / "lib64" / n) for r in roots if r for n in names] + names
    for c in cands:
        try:
            lib = ctypes.CDLL(c)
        except OSError:
            continue
        v = ctypes.c_int()
        if lib.cudaRuntimeGetVersion(ctypes.byref(v)) == 0:
            return v.value
    return None


def toolkit_version(build_dir: Path | None) -> str | None:
    """The nvcc version the lab was built with (the build's CMakeCache), else nvcc on PATH."""
    if build_dir is not None:
        cache = Path(build_dir) / "CMakeCache.txt"
        if cache.exists():
            m = re.search(r"^CMAKE_CUDA_COMPILER_VERSION:\w+=(\S+)", cache.read_text(errors="replace"), re.M)
            if m:
                return m.group(1)
        for f in Path(build_dir).glob("CMakeFiles/*/CMakeCUDACompiler.cmake"):
            m = re.search(r'CMAKE_CUDA_COMPILER_VERSION "([^"]+)"', f.read_text(errors="replace"))
            if m:
                return m.group(1)
    nvcc = shutil.which("nvcc") or ("/usr/local/cuda/bin/nvcc" if Path("/usr/local/cuda/bin/nvcc").exists() else None)
    if nvcc:
        try:
            out = subprocess.run([nvcc, "--version"], capture_output=True, text=True, timeout=20).stdout
        except (OSError, subprocess.TimeoutExpired):
            return None
        m = re.search(r"release (\d+\.\d+)", out)
        return m.group(1) if m else None
    return None


def lab_binaries(build_dir: Path | None, limit: int = 12) -> list[Path]:
    """A few of the lab's executables with device code: the benchmarks and one test per chapter."""
    if build_dir is None or not Path(build_dir).is_dir():
        return []
    b = Path(build_dir)
    picked = sorted(p for p in (b / "bench").glob("bench_ch[0-9][0-9]") if p.is_file())
    for d in sorted((b / "tests").glob("ch[0-9][0-9]")):
        # reference_chNN_test_<name>: the reference track's test executables (lab_test)
        exes = sorted(p for p in d.glob("reference_ch*_test_*")
                      if p.is_file() and os.access(p, os.X_OK) and p.suffix == "")
        picked += exes[:1]
    return picked[:limit]


def parse_cuobjdump(elf_out: str, ptx_out: str) -> dict:
    """Architectures of `cuobjdump --list-elf` / `--list-ptx` output: {"sass": [...], "ptx": [...]}."""
    def archs(text: str) -> list[str]:
        return sorted(set(re.findall(r"\.(sm_\d+[af]?)\.(?:cubin|ptx)", text)), key=_arch_key)
    return {"sass": archs(elf_out), "ptx": archs(ptx_out)}


def _arch_key(a: str) -> tuple[int, str]:
    m = re.match(r"(?:sm|compute)_(\d+)(\w*)", a)
    return (int(m.group(1)), m.group(2)) if m else (0, a)


def fatbin_archs(paths: list[Path]) -> list[dict] | None:
    """cuobjdump on each binary; None when cuobjdump is not installed (the check is then skipped)."""
    tool = shutil.which("cuobjdump") or (
        "/usr/local/cuda/bin/cuobjdump" if Path("/usr/local/cuda/bin/cuobjdump").exists() else None)
    if tool is None:
        return None
    out = []
    for p in paths:
        try:
            elf = subprocess.run([tool, "--list-elf", str(p)], capture_output=True, text=True, timeout=60)
            ptx = subprocess.run([tool, "--list-ptx", str(p)], capture_output=True, text=True, timeout=60)
        except (OSError, subprocess.TimeoutExpired) as e:
            out.append({"path": str(p), "error": str(e)})
            continue
        rec = {"path": str(p), **parse_cuobjdump(elf.stdout, ptx.stdout)}
        out.append(rec)
    return out
