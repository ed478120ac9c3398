// Entry of the bench dashboard: React's production build first (see react-production.ts).
import './react-production.js';

export { startBenchDashboard, type BenchDashboardOptions, type BenchProgressView } from './bench-dashboard-app.js';
export { benchViewFromProgress, type BenchProgressLike, type BenchRunFacts } from './bench-progress-view.js';
