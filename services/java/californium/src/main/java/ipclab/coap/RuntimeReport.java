package ipclab.coap;

import java.io.File;
import java.io.IOException;
import java.lang.management.GarbageCollectorMXBean;
import java.lang.management.ManagementFactory;
import java.net.URISyntaxException;
import java.net.URL;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.jar.JarFile;
import java.util.jar.Manifest;

/**
 * The JVM's description of itself, printed once at start as one line on stderr,
 * {@code ipclab-runtime {...}}: the harness copies it into the run's manifest
 * ({@code runtimes}, ipclab.backends.described), so a run says which JVM, flags, heap and
 * collectors made it (the heap's maximum is the JVM's ergonomics unless a flag sets it), which
 * Californium (its jar's {@code Bundle-Version}: the jar has no Implementation-Version, so the
 * package's version is null), and the socket and thread settings in effect ({@link Sockets}).
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

    /** The version in the manifest of the jar Californium's core was loaded from, or null. */
    static String californiumVersion() {
        Class<?> core = org.eclipse.californium.core.CoapServer.class;
        try {
            URL jar = core.getProtectionDomain().getCodeSource().getLocation();
            try (JarFile file = new JarFile(new File(jar.toURI()))) {
                Manifest manifest = file.getManifest();
                String version = manifest == null ? null
                        : manifest.getMainAttributes().getValue("Bundle-Version");
                if (version != null) {
                    return version;
                }
            }
        } catch (IOException | URISyntaxException | SecurityException | NullPointerException e) {
            // not from a jar: the package's version, if any
        }
        return core.getPackage().getImplementationVersion();
    }

    private static String object(Map<String, String> values) {
        List<String> fields = new ArrayList<>();
        for (Map.Entry<String, String> e : values.entrySet()) {
            fields.add(quote(e.getKey()) + ": " + quote(e.getValue()));
        }
        return "{" + String.join(", ", fields) + "}";
    }

    static String json(String role, Map<String, String> settings) {
        Runtime rt = Runtime.getRuntime();
        List<String> collectors = new ArrayList<>();
        for (GarbageCollectorMXBean bean : ManagementFactory.getGarbageCollectorMXBeans()) {
            collectors.add(bean.getName());
        }
        String californium = californiumVersion();
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
                + ", \"californium\": " + (californium == null ? "null" : quote(californium))
                + ", \"settings\": " + object(settings)
                + "}";
    }

    static void print(String role, Map<String, String> settings) {
        System.err.println("ipclab-runtime " + json(role, settings));
    }
}
