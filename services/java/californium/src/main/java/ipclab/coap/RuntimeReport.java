package ipclab.coap;

import java.lang.management.GarbageCollectorMXBean;
import java.lang.management.ManagementFactory;
import java.util.ArrayList;
import java.util.List;

/**
 * The JVM's description of itself, printed once at start as one line on stderr,
 * {@code ipclab-runtime {...}}: the harness copies it into the run's manifest
 * ({@code runtimes}, ipclab.backends.described), so a run says which JVM, flags, heap and
 * collectors made it (the heap's maximum is the JVM's ergonomics unless a flag sets it).
 */
final class RuntimeReport {
    private RuntimeReport() {
    }

    private static String quote(String s) {
        return "\"" + s.replace("\\", "\\\\").replace("\"", "\\\"") + "\"";
    }

    private static String list(List<String> items) {
        List<String> quoted = new ArrayList<>();
        for (String i : items) {
            quoted.add(quote(i));
        }
        return "[" + String.join(", ", quoted) + "]";
    }

    static String json(String role) {
        Runtime rt = Runtime.getRuntime();
        List<String> collectors = new ArrayList<>();
        for (GarbageCollectorMXBean bean : ManagementFactory.getGarbageCollectorMXBeans()) {
            collectors.add(bean.getName());
        }
        String californium = org.eclipse.californium.core.CoapServer.class.getPackage()
                .getImplementationVersion();
        return "{\"role\": " + quote(role)
                + ", \"runtime\": \"jvm\""
                + ", \"pid\": " + ProcessHandle.current().pid()
                + ", \"java_version\": " + quote(System.getProperty("java.version"))
                + ", \"vm\": " + quote(System.getProperty("java.vm.name") + " "
                        + System.getProperty("java.vm.version"))
                + ", \"flags\": " + list(ManagementFactory.getRuntimeMXBean().getInputArguments())
                + ", \"max_heap_bytes\": " + rt.maxMemory()
                + ", \"processors\": " + rt.availableProcessors()
                + ", \"collectors\": " + list(collectors)
                + ", \"californium\": " + quote(String.valueOf(californium))
                + "}";
    }

    static void print(String role) {
        System.err.println("ipclab-runtime " + json(role));
    }
}
