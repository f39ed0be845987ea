package ipclab.payload;

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
 * service's {@code /healthz}, so each run says under which heap policy it ran.
 */
final class RuntimeInfo {
    private RuntimeInfo() {
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
