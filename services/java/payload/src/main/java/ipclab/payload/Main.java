package ipclab.payload;

import io.quarkus.runtime.Quarkus;
import io.quarkus.runtime.annotations.QuarkusMain;
import java.util.Map;

/**
 * The payload services' entry point: the role and its knobs are checked before Quarkus
 * starts, so a role that cannot run (an unknown role, an encoder the JVM services do not
 * have, a malformed knob) ends with its reason as the last line of its log and exit code 2,
 * not deep in a start-up stack trace.
 */
@QuarkusMain
public final class Main {
    private Main() {
    }

    public static void main(String... args) {
        Map<String, String> env = System.getenv();
        try {
            Routes.role(env, env.getOrDefault("IPCLAB_ROLE", ""));
        } catch (IllegalArgumentException e) {
            System.err.println("ipclab-payload: " + e.getMessage());
            System.exit(2);
        }
        Quarkus.run(args);
    }
}
