package ipclab.coap;

import com.sun.management.GarbageCollectionNotificationInfo;

import java.lang.management.GarbageCollectorMXBean;
import java.lang.management.ManagementFactory;
import java.util.Locale;

import javax.management.NotificationEmitter;
import javax.management.openmbean.CompositeData;

/**
 * The JVM's garbage collections, timestamped as the Python roles' major GCs are
 * (services/gcwatch.py): with {@code IPCLAB_GC_EVENTS=1}, one line per collection on stderr,
 * {@code ipclab-gc {"t": <unix s at start>, "ms": <duration>, "gc": <collector>,
 * "action": "end of minor GC" | "end of major GC", "cause": ...}}, which the backends keep
 * as the role's log, so response-time extremes can be set against the JVM's pauses.
 */
final class GcEvents {
    static final String PREFIX = "ipclab-gc ";

    private GcEvents() {
    }

    static void install() {
        long startMs = System.currentTimeMillis() - ManagementFactory.getRuntimeMXBean().getUptime();
        for (GarbageCollectorMXBean bean : ManagementFactory.getGarbageCollectorMXBeans()) {
            if (!(bean instanceof NotificationEmitter emitter)) {
                continue;
            }
            emitter.addNotificationListener((notification, handback) -> {
                if (!notification.getType().equals(
                        GarbageCollectionNotificationInfo.GARBAGE_COLLECTION_NOTIFICATION)) {
                    return;
                }
                GarbageCollectionNotificationInfo info = GarbageCollectionNotificationInfo.from(
                        (CompositeData) notification.getUserData());
                double t = (startMs + info.getGcInfo().getStartTime()) / 1000.0;
                System.err.printf(Locale.ROOT,
                        "%s{\"t\": %.3f, \"ms\": %d, \"gc\": \"%s\", \"action\": \"%s\", \"cause\": \"%s\"}%n",
                        PREFIX, t, info.getGcInfo().getDuration(), info.getGcName(),
                        info.getGcAction(), info.getGcCause());
            }, null, null);
        }
    }
}
