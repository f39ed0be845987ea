package ipclab.payload;

import com.sun.management.HotSpotDiagnosticMXBean;
import com.sun.management.OperatingSystemMXBean;
import com.sun.management.VMOption;

import java.lang.management.GarbageCollectorMXBean;
import java.lang.management.ManagementFactory;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The JVM's description of itself: version, flags, the heap's maximum (the JVM's
 * ergonomics, a quarter of the container's memory by default, unless a flag sets it), the
 * processors it sees and its collectors, with the versions of Quarkus, Jackson and
 * protobuf-java. Printed once at start as {@code ipclab-runtime {...}} on stderr (the
 * harness copies it into the run's manifest, {@code runtimes}) and answered in the data
 * service's {@code /healthz}, so each run says under which heap policy it ran: the policy it
 * was asked for ({@code IPCLAB_HEAP_POLICY}), the memory the JVM sized itself from, and the
 * final values of the flags that size the heap and pick the collector, as
 * {@code jcmd VM.flags} prints them, each with its origin (a command-line flag, the JVM's
 * ergonomics, or its default).
 */
final class RuntimeInfo {
    /** The flags that size the heap, pick the collector or end the JVM on a full heap. */
    static final String[] HEAP_FLAGS = {
        "MaxHeapSize", "InitialHeapSize", "MinHeapSize", "MaxRAM", "MaxRAMPercentage",
        "InitialRAMPercentage", "UseSerialGC", "UseParallelGC", "UseG1GC",
        "UseContainerSupport", "ExitOnOutOfMemoryError",
    };

    private RuntimeInfo() {
    }

    /** Each of {@link #HEAP_FLAGS}: its final value and its origin ({@code VM_CREATION}: the
     * command line; {@code ERGONOMIC}; {@code DEFAULT}). */
    static Map<String, Object> vmOptions() {
        HotSpotDiagnosticMXBean hotspot = ManagementFactory.getPlatformMXBean(
                HotSpotDiagnosticMXBean.class);
        Map<String, Object> out = new LinkedHashMap<>();
        for (String name : HEAP_FLAGS) {
            try {
                VMOption option = hotspot.getVMOption(name);
                Map<String, Object> one = new LinkedHashMap<>();
                one.put("value", option.getValue());
                one.put("origin", option.getOrigin().name());
                out.put(name, one);
            } catch (IllegalArgumentException e) {
                out.put(name, null); // not a flag of this JVM
            }
        }
        return out;
    }

    static Map<String, Object> describe(String role) {
        Runtime rt = Runtime.getRuntime();
        List<String> collectors = new ArrayList<>();
        for (GarbageCollectorMXBean bean : ManagementFactory.getGarbageCollectorMXBeans()) {
            collectors.add(bean.getName());
        }
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("role", role);
        out.put("runtime", "jvm");
        out.put("pid", ProcessHandle.current().pid());
        out.put("java_version", System.getProperty("java.version"));
        out.put("vm", System.getProperty("java.vm.name") + " "
                + System.getProperty("java.vm.version"));
        out.put("flags", ManagementFactory.getRuntimeMXBean().getInputArguments());
        out.put("max_heap_bytes", rt.maxMemory());
        out.put("heap_policy", System.getenv().getOrDefault("IPCLAB_HEAP_POLICY", ""));
        // the memory the JVM sized its heap from: the container's limit where it sees one
        out.put("memory_bytes", ((OperatingSystemMXBean) ManagementFactory
                .getOperatingSystemMXBean()).getTotalMemorySize());
        out.put("vm_options", vmOptions());
        out.put("processors", rt.availableProcessors());
        out.put("collectors", collectors);
        out.put("quarkus", String.valueOf(io.quarkus.runtime.Application.class.getPackage()
                .getImplementationVersion()));
        out.put("jackson", com.fasterxml.jackson.databind.cfg.PackageVersion.VERSION.toString());
        return out;
    }

    static void print(String role) {
        System.err.println("ipclab-runtime " + new String(Json.bytes(describe(role)),
                java.nio.charset.StandardCharsets.UTF_8));
        System.err.flush();
    }
}
