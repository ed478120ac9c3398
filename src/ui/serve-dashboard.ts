// Entry of the serve dashboard: React's production build first (see react-production.ts).
import './react-production.js';

export { startServeDashboard, ServeDashboardApp, type ServeDashboardOptions } from './serve-dashboard-app.js';
export { shouldUseDashboard } from './terminal.js';
