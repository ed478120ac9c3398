/**
 * onnxruntime's telemetry, off unless the operator says otherwise. Since 1.30 onnxruntime-node's
 * Linux and macOS builds send usage events to Microsoft (mobile.events.data.microsoft.com, the
 * 1DS collector) and write a device id and an event cache under `~/.cache/Microsoft/` and a
 * `mat-debug-<pid>.log` in the temporary directory: a DNS lookup and an upload from every
 * server, a file per process, and on a read-only root filesystem a warning per start.
 * `ORT_DISABLE_TELEMETRY=1` stops all of it when set before onnxruntime starts; a value the
 * operator set (`ORT_DISABLE_TELEMETRY=0` keeps it on) is left as it is. Imported before
 * onnxruntime-node by every module that loads it; child processes and threads inherit it.
 */
process.env.ORT_DISABLE_TELEMETRY ??= '1';
