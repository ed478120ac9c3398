// Entry of the watch dashboard: React's production build first (see react-production.ts).
import './react-production.js';

export { startWatchDashboard, type WatchDashboardOptions } from './watch-dashboard-app.js';
