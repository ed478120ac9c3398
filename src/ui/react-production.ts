/**
 * Selects React's production build for the dashboards unless the environment chose one. The
 * development build times every component render (performance.measure) and roughly doubles the
 * cost of a frame, which a server under load pays on its main thread.
 *
 * Import it first, from a module that is not JSX: a .tsx file imports react/jsx-runtime before
 * anything else, which would load React before this runs.
 */
process.env.NODE_ENV ??= 'production';

export {};
